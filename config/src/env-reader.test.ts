import { describe, expect, it } from "vitest";
import { ConfigError, envReader } from "./index.ts";

describe("envReader", () => {
  it("trims values and treats blank ones as unset", () => {
    const env = envReader({ HOST: " 0.0.0.0 ", PORT: "", EMPTY: "   " });
    expect(env.string("HOST")).toBe("0.0.0.0");
    expect(env.string("PORT")).toBeUndefined();
    expect(env.string("EMPTY")).toBeUndefined();
    expect(env.string("MISSING")).toBeUndefined();
  });

  it("reads whole numbers in range, falling back when unset or blank", () => {
    const env = envReader({ PORT: "8080", ZERO: "0", BLANK: " " });
    expect(env.integer("PORT", 1, 0, 65_535)).toBe(8080);
    expect(env.integer("ZERO", 1, 0, 65_535)).toBe(0);
    expect(env.integer("BLANK", 7, 0, 10)).toBe(7);
    expect(env.integer("MISSING", 7, 0, 10)).toBe(7);
    expect(env.problems).toEqual([]);
  });

  it("records one problem per bad number and returns the fallback", () => {
    const env = envReader({ A: "70000", B: "-1", C: "1.5", D: "abc", E: "9".repeat(20) });
    for (const name of ["A", "B", "C", "D", "E"]) expect(env.integer(name, 3, 1, 65_535)).toBe(3);
    expect(env.problems).toEqual([
      'A must be a whole number from 1 to 65535 (got "70000")',
      'B must be a whole number from 1 to 65535 (got "-1")',
      'C must be a whole number from 1 to 65535 (got "1.5")',
      'D must be a whole number from 1 to 65535 (got "abc")',
      `E must be a whole number from 1 to 65535 (got "${"9".repeat(20)}")`,
    ]);
  });

  it("splits comma-separated lists, dropping blank items", () => {
    const env = envReader({ LIST: " a, b ,,c ,", BLANK: " " });
    expect(env.list("LIST")).toEqual(["a", "b", "c"]);
    expect(env.list("BLANK")).toEqual([]);
    expect(env.list("MISSING")).toEqual([]);
  });

  it("throws one ConfigError listing every problem, and nothing when there is none", () => {
    const env = envReader({ PORT: "x" });
    env.assertValid();
    env.integer("PORT", 1, 1, 2);
    env.problem("TOKEN is not set");
    let error: unknown;
    try {
      env.assertValid();
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).name).toBe("ConfigError");
    expect((error as ConfigError).problems).toEqual([
      'PORT must be a whole number from 1 to 2 (got "x")',
      "TOKEN is not set",
    ]);
    expect((error as ConfigError).message).toBe(
      'PORT must be a whole number from 1 to 2 (got "x")\nTOKEN is not set',
    );
  });
});

describe("ConfigError", () => {
  it("keeps a frozen copy of its problems", () => {
    const problems = ["one", "two"];
    const error = new ConfigError(problems);
    problems.push("three");
    expect(error.problems).toEqual(["one", "two"]);
    expect(Object.isFrozen(error.problems)).toBe(true);
    expect(error).toBeInstanceOf(Error);
  });
});
