import { describe, expect, it } from "vitest";
import { readOrigin } from "./origin.ts";

describe("reading an origin", () => {
  it("gives the origin a browser sends, and says what else a text is", () => {
    expect(readOrigin(" https://Tools.Example.com:443/ ")).toEqual({ origin: "https://tools.example.com" });
    expect(readOrigin("http://127.0.0.1:4100")).toEqual({ origin: "http://127.0.0.1:4100" });
    expect(readOrigin("tools.example.com")).toEqual({ problem: "not-a-url" });
    expect(readOrigin("javascript:alert(1)")).toEqual({ problem: "not-web" });
    expect(readOrigin("https://*.example.com")).toEqual({ problem: "wildcard" });
    for (const more of [
      "https://tools.example.com/app",
      "https://tools.example.com?x=1",
      "https://tools.example.com/#top",
      "https://user:pw@tools.example.com",
    ])
      expect(readOrigin(more)).toEqual({ problem: "more-than-an-origin" });
  });
});
