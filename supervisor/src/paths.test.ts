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
