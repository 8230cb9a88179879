import { describe, expect, it } from "vitest";
import { originAllowed, SocketLimit, tokenFromProtocols } from "./admission.ts";

describe("socket admission", () => {
  it("finds the token offered beside our protocol, and nothing in any other shape", () => {
    expect(tokenFromProtocols("cubicle.screen.v1, abc.def.ghi", "cubicle.screen.v1")).toBe("abc.def.ghi");
    expect(tokenFromProtocols("abc.def.ghi,cubicle.screen.v1", "cubicle.screen.v1")).toBe("abc.def.ghi");
    expect(tokenFromProtocols("abc.def.ghi", "cubicle.screen.v1")).toBeUndefined();
    expect(tokenFromProtocols("cubicle.screen.v1", "cubicle.screen.v1")).toBeUndefined();
    expect(tokenFromProtocols("cubicle.screen.v1, a, b", "cubicle.screen.v1")).toBeUndefined();
    expect(tokenFromProtocols(undefined, "cubicle.screen.v1")).toBeUndefined();
  });

  it("lets in listed origins and programs without one, and refuses other sites", () => {
    const allowed = ["https://cubicle.example.com"];
    expect(originAllowed("https://cubicle.example.com", allowed)).toBe(true);
    expect(originAllowed(undefined, allowed)).toBe(true);
    expect(originAllowed("https://evil.example.net", allowed)).toBe(false);
    expect(originAllowed("null", allowed)).toBe(false);
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
