import { spawn } from "node:child_process";
import { rm } from "node:fs/promises";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { RecordingDecodeError } from "./errors.ts";
import type { Records } from "./frame.ts";
import type { Framebuffer } from "./framebuffer.ts";
import { ScreenDecoder } from "./screen.ts";

export interface ExportVideoOptions {
  /** The WebM file to write; removed again if the export fails. */
  output: string;
  /** Frames per second of recording time. */
  fps?: number;
  /** The recording's duration: the video's, the last frame held until then. */
  durationMs: number;
  /** The share of the frames handed to ffmpeg so far, at most once a percent; 1 once the file is written. */
  onProgress?: (fraction: number) => void;
  /** Stops the export and ffmpeg with it. */
  signal?: AbortSignal;
}

/** Keeps the end of ffmpeg's complaints for the error message. */
const STDERR_KEPT = 4000;

/**
 * Renders a recording as a VP8 WebM with Debian's ffmpeg: the screen is decoded once, in recording
 * time, and written to ffmpeg as raw RGBA once per frame tick. The video has the size of the first
 * screen (rounded up to even, which the encoder needs); a screen resized later is cropped or padded
 * with black to it.
 */
export async function exportVideo(records: Records, options: ExportVideoOptions): Promise<void> {
  const { output, fps = 10, durationMs, onProgress, signal } = options;
  signal?.throwIfAborted();
  const total = Math.max(1, Math.round((durationMs * fps) / 1000));
  const frames = videoFrames(records, fps, total, (written) => {
    const percent = Math.floor((written * 100) / total);
    if (written < total && percent > Math.floor(((written - 1) * 100) / total)) onProgress?.(written / total);
  });
  const first = await frames.next();
  if (first.done) throw new RecordingDecodeError("the recording shows no screen");
  const { width, height } = first.value;

  const ffmpeg = spawn(
    "ffmpeg",
    [
      ...["-hide_banner", "-loglevel", "error", "-y"],
      ...[
        "-f",
        "rawvideo",
        "-pix_fmt",
        "rgba",
        "-video_size",
        `${width}x${height}`,
        "-framerate",
        String(fps),
      ],
      ...["-i", "pipe:0"],
      // screens are mostly still: a constant-quality VP8 at the encoder's fast setting
      ...["-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-crf", "10", "-b:v", "2M"],
      ...["-pix_fmt", "yuv420p", "-an", "-f", "webm", output],
    ],
    { stdio: ["pipe", "ignore", "pipe"], ...(signal ? { signal } : {}) },
  );
  let stderr = "";
  ffmpeg.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_KEPT);
  });
  const exited = new Promise<number | null>((resolve, reject) => {
    ffmpeg.once("error", reject);
    ffmpeg.once("close", resolve);
  });
  try {
    let fed: unknown;
    await pipeline(
      Readable.from(
        (async function* () {
          yield first.value.rgba;
          for await (const frame of frames) yield frame.rgba;
        })(),
        { objectMode: false },
      ),
      ffmpeg.stdin,
      ...(signal ? [{ signal }] : []),
    ).catch((error: unknown) => {
      fed = error;
      ffmpeg.kill("SIGKILL");
    });
    const code = await exited.catch((error: NodeJS.ErrnoException) => {
      throw error.code === "ENOENT" ? new Error("ffmpeg is not installed (Debian's ffmpeg package)") : error;
    });
    // a frame that could not be made stopped ffmpeg; ffmpeg stopping is told by ffmpeg
    if (fed !== undefined && (code === 0 || code === null)) throw fed;
    if (code !== 0) throw new Error(`ffmpeg failed (exit code ${code}): ${stderr.trim() || "no message"}`);
  } catch (error) {
    await rm(output, { force: true });
    throw signal?.aborted ? signal.reason : error;
  }
  onProgress?.(1);
}

interface VideoFrame {
  width: number;
  height: number;
  rgba: Buffer;
}

/**
 * The frames of the video, a copy each (ffmpeg's pipe may still hold one while the next is drawn):
 * frame i shows the screen after every record up to i/fps seconds.
 */
async function* videoFrames(
  records: Records,
  fps: number,
  total: number,
  written: (frames: number) => void,
): AsyncGenerator<VideoFrame> {
  const screen = new ScreenDecoder();
  let size: { width: number; height: number } | undefined;
  let next = 0;
  function* upTo(atMs: number): Generator<VideoFrame> {
    const { framebuffer } = screen;
    if (!framebuffer) return;
    size ??= {
      width: framebuffer.width + (framebuffer.width % 2),
      height: framebuffer.height + (framebuffer.height % 2),
    };
    for (; next < total && (next * 1000) / fps < atMs; next++) {
      yield { ...size, rgba: fitted(framebuffer, size.width, size.height) };
      written(next + 1);
    }
  }
  for await (const record of records) {
    yield* upTo(record.at);
    screen.push(record);
  }
  yield* upTo(Number.POSITIVE_INFINITY);
}

/** The screen's pixels on a canvas of the video's size. */
function fitted(framebuffer: Framebuffer, width: number, height: number): Buffer {
  if (framebuffer.width === width && framebuffer.height === height) return Buffer.from(framebuffer.pixels);
  const canvas = Buffer.alloc(width * height * 4);
  const rowBytes = Math.min(width, framebuffer.width) * 4;
  for (let y = 0; y < Math.min(height, framebuffer.height); y++) {
    const at = y * framebuffer.width * 4;
    canvas.set(framebuffer.pixels.subarray(at, at + rowBytes), y * width * 4);
  }
  return canvas;
}
