import { type RecordingRecord, RecordKind } from "@cubicle/proxy/recording";
import { RecordingDecodeError } from "./errors.ts";
import { ScreenDecoder } from "./screen.ts";

export interface RecordingFrame {
  png: Buffer;
  width: number;
  height: number;
  /** The time of the last SERVER record on the screen (ms since the recording began), at most the moment asked for. */
  at: number;
}

export type Records = AsyncIterable<RecordingRecord> | Iterable<RecordingRecord>;

/** The screen as it was at `atMs`: after every record up to that moment. Reads no further. */
export async function frameAt(records: Records, atMs: number): Promise<RecordingFrame> {
  const screen = new ScreenDecoder();
  let at = 0;
  for await (const record of records) {
    if (record.at > atMs) break;
    screen.push(record);
    if (record.kind === RecordKind.SERVER) at = record.at;
  }
  const { framebuffer } = screen;
  if (!framebuffer) throw new RecordingDecodeError(`the recording shows no screen by ${atMs} ms`);
  return { png: framebuffer.png(), width: framebuffer.width, height: framebuffer.height, at };
}
