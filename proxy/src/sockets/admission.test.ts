import { describe, expect, it } from "vitest";
import { offeredProtocols, originAllowed, SocketLimit } from "./admission.ts";

describe("socket admission", () => {
  it("finds the token offered beside one of our protocols, and nothing in any other shape", () => {
    const ours = ["cubicle.screen.v1", "cubicle.screen.v1.status"];
    expect(offeredProtocols("cubicle.screen.v1, abc.def.ghi", ours)).toEqual({
      protocol: "cubicle.screen.v1",
      token: "abc.def.ghi",
    });
    expect(offeredProtocols("abc.def.ghi,cubicle.screen.v1.status", ours)).toEqual({
      protocol: "cubicle.screen.v1.status",
      token: "abc.def.ghi",
    });
    expect(offeredProtocols("abc.def.ghi", ours)).toBeUndefined();
    expect(offeredProtocols("cubicle.screen.v1", ours)).toBeUndefined();
    expect(offeredProtocols("cubicle.screen.v1, cubicle.screen.v1.status", ours)).toBeUndefined();
    expect(offeredProtocols("cubicle.screen.v1, a, b", ours)).toBeUndefined();
    expect(offeredProtocols("other.v1, abc", ours)).toBeUndefined();
    expect(offeredProtocols(undefined, ours)).toBeUndefined();
  });

  it("lets in the dashboard, listed embed origins and programs without one, and refuses other sites", () => {
    const allowed = { dashboard: ["https://cubicle.example.com"], embed: ["https://tools.example.org"] };
    const unbound = { ...allowed, bound: undefined };
    expect(originAllowed("https://cubicle.example.com", unbound)).toBe(true);
    expect(originAllowed("https://tools.example.org", unbound)).toBe(true);
    expect(originAllowed(undefined, unbound)).toBe(true);
    expect(originAllowed("https://evil.example.net", unbound)).toBe(false);
    expect(originAllowed("null", unbound)).toBe(false);
  });

  it("opens a token bound to an origin only from that origin, and only while it is listed", () => {
    const bound = { dashboard: ["https://cubicle.example.com"], bound: "https://tools.example.org" };
    expect(
      originAllowed("https://tools.example.org", { ...bound, embed: ["https://tools.example.org"] }),
    ).toBe(true);
    expect(originAllowed("https://tools.example.org", { ...bound, embed: [] })).toBe(false);
    expect(originAllowed(undefined, { ...bound, embed: ["https://tools.example.org"] })).toBe(false);
    expect(
      originAllowed("https://cubicle.example.com", { ...bound, embed: ["https://tools.example.org"] }),
    ).toBe(false);
  });

  it("holds each key to its limit and frees a place on release, once", () => {
    const limit = new SocketLimit(2);
    const first = limit.take("1.2.3.4");
    const second = limit.take("1.2.3.4");
    expect(first && second).toBeTruthy();
    expect(limit.take("1.2.3.4")).toBeUndefined();
    expect(limit.take("5.6.7.8")).toBeTruthy();
    first?.();
    first?.();
    expect(limit.take("1.2.3.4")).toBeTruthy();
    expect(limit.take("1.2.3.4")).toBeUndefined();
  });
});
