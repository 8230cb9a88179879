import { describe, expect, it } from "vitest";
import { containerPath, homeRelativePath } from "./paths.ts";
import { SupervisorProblem } from "./problems.ts";

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    if (error instanceof SupervisorProblem) return error.code;
    throw error;
  }
  return undefined;
}

describe("homeRelativePath", () => {
  it.each([
    ["", ""],
    [".", ""],
    ["./", ""],
    ["a", "a"],
    ["a/b/", "a/b"],
    ["a//b", "a/b"],
    ["a/./b", "a/b"],
    ["a/../b", "b"],
    ["a/..", ""],
    ["..a", "..a"],
    [".hidden/x", ".hidden/x"],
  ])("normalises %j to %j", (input, expected) => {
    expect(homeRelativePath(input)).toBe(expected);
  });

  it.each(["/etc/passwd", "/", "..", "../x", "a/../../x", "a\0b", "a\\b", "./../x"])(
    "refuses %j as outside the home",
    (input) => {
      expect(codeOf(() => homeRelativePath(input))).toBe("PATH_OUTSIDE_HOME");
    },
  );

  it.each([
    ["a name past 255 bytes", "n".repeat(256)],
    ["a name past 255 bytes in UTF-8", "é".repeat(128)],
    ["a path past 4095 bytes", Array.from({ length: 41 }, () => "d".repeat(99)).join("/")],
    ["a lone surrogate", "lone-\uD800"],
  ])("refuses %s as an invalid path", (_, input) => {
    expect(codeOf(() => homeRelativePath(input))).toBe("INVALID_PATH");
  });

  it("takes a name of 255 bytes and a path of 4095", () => {
    expect(homeRelativePath("m".repeat(255))).toBe("m".repeat(255));
    const longest = `${Array.from({ length: 20 }, () => "d".repeat(200)).join("/")}/${"f".repeat(75)}`;
    expect(Buffer.byteLength(longest)).toBe(4095);
    expect(homeRelativePath(longest)).toBe(longest);
  });

  it("says the same thing for every refusal", () => {
    try {
      homeRelativePath("../../etc");
    } catch (error) {
      expect((error as Error).message).toBe("path is outside this computer's home");
    }
  });
});

describe("containerPath", () => {
  it("maps home-relative paths under /home/cubicle", () => {
    expect(containerPath("")).toBe("/home/cubicle");
    expect(containerPath("a/b")).toBe("/home/cubicle/a/b");
  });
});
