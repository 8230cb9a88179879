import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportVideo, RecordingDecodeError } from "./index.ts";
import { end, framebufferUpdate, type Rgb, raw, recording, rect, server } from "./testing/rfb-stream.ts";

const run = promisify(execFile);
const WIDTH = 65; // odd, as a screen may be: the video rounds it up
const HEIGHT = 49;
const fill = (at: number, colour: Rgb) =>
  server(at, framebufferUpdate(rect(0, 0, WIDTH, HEIGHT, 0, raw(WIDTH, HEIGHT, colour))));
const records = recording(
  WIDTH,
  HEIGHT,
  fill(0, [255, 0, 0]),
  fill(1500, [0, 255, 0]),
  fill(3000, [0, 0, 255]),
  end(3500),
);

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "cubicle-video-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function probe(file: string) {
  const { stdout } = await run("ffprobe", [
    ...[
      "-v",
      "error",
      "-show_entries",
      "format=duration:stream=codec_name,width,height",
      "-of",
      "json",
      file,
    ],
  ]);
  return JSON.parse(stdout) as {
    format: { duration: string };
    streams: Array<{ codec_name: string; width: number; height: number }>;
  };
}

/** The colour in the middle of the video's frame at `seconds`: one of the test's three, or its bytes. */
async function colourAt(file: string, seconds: number): Promise<string> {
  const { stdout } = await run(
    "ffmpeg",
    [
      ...["-v", "error", "-ss", String(seconds), "-i", file, "-frames:v", "1"],
      ...["-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:1"],
    ],
    { encoding: "buffer" },
  );
  const at = (24 * (WIDTH + 1) + 32) * 3;
  const rgb = [...stdout.subarray(at, at + 3)];
  const names = ["red", "green", "blue"];
  // lossy VP8: the colour's own channel stays high and the others low
  const strong = rgb.flatMap((value, channel) => (value > 180 ? [names[channel]] : value < 80 ? [] : ["?"]));
  return strong.length === 1 && strong[0] !== "?" ? (strong[0] as string) : rgb.join(",");
}

describe("exportVideo", () => {
  it("writes a WebM as long as the recording, showing the screen at each moment", async () => {
    const output = join(dir, "recording.webm");
    const progress: number[] = [];
    await exportVideo(records, {
      output,
      durationMs: 3500,
      onProgress: (fraction) => progress.push(fraction),
    });

    const { format, streams } = await probe(output);
    expect(Math.abs(Number(format.duration) - 3.5)).toBeLessThanOrEqual(1);
    expect(streams[0]).toEqual({ codec_name: "vp8", width: 66, height: 50 });
    expect(await colourAt(output, 0.5)).toBe("red");
    expect(await colourAt(output, 2)).toBe("green");
    expect(await colourAt(output, 3.3)).toBe("blue");

    expect(progress.at(-1)).toBe(1);
    expect(progress.length).toBeGreaterThan(2);
    expect([...progress].sort((a, b) => a - b)).toEqual(progress);
  });

  it("holds the last frame until the recording's end", async () => {
    const output = join(dir, "held.webm");
    await exportVideo(records, { output, fps: 5, durationMs: 12_000 });
    expect(Math.abs(Number((await probe(output)).format.duration) - 12)).toBeLessThanOrEqual(1);
    expect(await colourAt(output, 11.5)).toBe("blue");
  });

  it("stops ffmpeg and leaves no file when aborted", async () => {
    const output = join(dir, "aborted.webm");
    const controller = new AbortController();
    const exporting = exportVideo(records, {
      output,
      durationMs: 600_000,
      signal: controller.signal,
      onProgress: (fraction) => {
        if (fraction > 0.01) controller.abort();
      },
    });
    await expect(exporting).rejects.toMatchObject({ name: "AbortError" });
    expect(existsSync(output)).toBe(false);
  });

  it("stops ffmpeg and leaves no file when the recording cannot be decoded", async () => {
    const output = join(dir, "damaged.webm");
    const damaged = [...records.slice(0, 3), server(2000, Uint8Array.of(77))];
    await expect(exportVideo(damaged, { output, durationMs: 3500 })).rejects.toThrow(RecordingDecodeError);
    expect(existsSync(output)).toBe(false);
  });

  it("rejects with ffmpeg's complaint when ffmpeg fails", async () => {
    const output = join(dir, "missing", "recording.webm");
    await expect(exportVideo(records, { output, durationMs: 3500 })).rejects.toThrow(
      /ffmpeg failed \(exit code \d+\): .*missing/s,
    );
  });
});
