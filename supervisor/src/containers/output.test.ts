import { type CommandEvent, OUTPUT_TRUNCATED_MARKER } from "@cubicle/providers/contract";
import { describe, expect, it } from "vitest";
import { OutputLimiter } from "./output.ts";

const text = (events: CommandEvent[], stream: "stdout" | "stderr") =>
  events
    .filter((event) => event.type === stream)
    .map((event) => (event.type === "exit" ? "" : event.data))
    .join("");

describe("OutputLimiter", () => {
  it("passes output through below the cap", () => {
    const limiter = new OutputLimiter(100);
    const events = [
      ...limiter.write("stdout", Buffer.from("hello ")),
      ...limiter.write("stderr", Buffer.from("oops")),
      ...limiter.write("stdout", Buffer.from("world")),
      ...limiter.flush(),
    ];
    expect(text(events, "stdout")).toBe("hello world");
    expect(text(events, "stderr")).toBe("oops");
    expect(limiter.truncated).toBe(false);
  });

  it("keeps a character split across chunks whole", () => {
    const limiter = new OutputLimiter(100);
    const euro = Buffer.from("€");
    const events = [
      ...limiter.write("stdout", euro.subarray(0, 1)),
      ...limiter.write("stdout", euro.subarray(1)),
      ...limiter.flush(),
    ];
    expect(text(events, "stdout")).toBe("€");
  });

  it("counts both streams against one cap, emits the marker once and drops the rest", () => {
    const limiter = new OutputLimiter(10);
    const events = [
      ...limiter.write("stderr", Buffer.from("123456")),
      ...limiter.write("stdout", Buffer.from("abcdefgh")),
      ...limiter.write("stdout", Buffer.from("more")),
      ...limiter.write("stderr", Buffer.from("more")),
      ...limiter.flush(),
    ];
    expect(text(events, "stderr")).toBe("123456");
    expect(text(events, "stdout")).toBe(`abcd${OUTPUT_TRUNCATED_MARKER}`);
    expect(
      events.filter((event) => event.type !== "exit" && event.data === OUTPUT_TRUNCATED_MARKER),
    ).toHaveLength(1);
    expect(limiter.truncated).toBe(true);
  });

  it("cuts on a character boundary", () => {
    const limiter = new OutputLimiter(4);
    const events = limiter.write("stdout", Buffer.from("ab€"));
    expect(text(events, "stdout")).toBe(`ab${OUTPUT_TRUNCATED_MARKER}`);
  });

  it("with a cap of 0 emits only the marker", () => {
    const limiter = new OutputLimiter(0);
    expect(text(limiter.write("stdout", Buffer.from("x")), "stdout")).toBe(OUTPUT_TRUNCATED_MARKER);
  });
});
