import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { bearerMatches } from "./auth.ts";

const TOKEN = "0123456789abcdef0123456789abcdef";
const expected = createHash("sha256").update(TOKEN).digest();

describe("bearerMatches", () => {
  it("accepts exactly the token as a Bearer credential", () => {
    expect(bearerMatches(expected, `Bearer ${TOKEN}`)).toBe(true);
    expect(bearerMatches(expected, `bearer ${TOKEN}`)).toBe(true);
  });

  it.each([
    undefined,
    "",
    TOKEN,
    `Basic ${TOKEN}`,
    `Bearer ${TOKEN}x`,
    `Bearer ${TOKEN.slice(1)}`,
    `Bearer ${TOKEN} extra`,
    "Bearer ",
  ])("refuses %j", (header) => {
    expect(bearerMatches(expected, header)).toBe(false);
  });
});
