import { describe, expect, it } from "vitest";
import { BearerToken } from "./bearer-token.ts";

const TOKEN = "0123456789abcdef0123456789abcdef";
const token = new BearerToken(TOKEN);

describe("BearerToken", () => {
  it("accepts exactly the token as a Bearer credential", () => {
    expect(token.matches(`Bearer ${TOKEN}`)).toBe(true);
    expect(token.matches(`bearer ${TOKEN}`)).toBe(true);
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
    expect(token.matches(header)).toBe(false);
  });
});
