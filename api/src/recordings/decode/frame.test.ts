import type { RecordingRecord } from "@cubicle/proxy/recording";
import { PNG } from "pngjs";
import { describe, expect, it } from "vitest";
import { RecordingDecodeError } from "./errors.ts";
import { frameAt } from "./index.ts";
import {
  end,
  framebufferUpdate,
  type Rgb,
  raw,
  recording,
  rect,
  server,
  serverInit,
} from "./testing/rfb-stream.ts";

const fill = (at: number, colour: Rgb) =>
  server(at, framebufferUpdate(rect(0, 0, 3, 2, 0, raw(3, 2, colour))));
const RED: Rgb = [255, 0, 0];
const GREEN: Rgb = [0, 255, 0];
const BLUE: Rgb = [0, 0, 255];
const records = recording(3, 2, fill(0, RED), fill(1000, GREEN), fill(2000, BLUE), end(2500));

function colourOf(png: Buffer): Rgb {
  const image = PNG.sync.read(png);
  return [...image.data.subarray(0, 3)] as unknown as Rgb;
}

describe("frameAt", () => {
  it("shows the screen after every record up to the moment", async () => {
    const frame = await frameAt(records, 1500);
    expect(frame).toMatchObject({ width: 3, height: 2, at: 1000 });
    expect(colourOf(frame.png)).toEqual(GREEN);
    expect(PNG.sync.read(frame.png)).toMatchObject({ width: 3, height: 2 });
  });

  it("includes a record at exactly the moment, and none after", async () => {
    expect(colourOf((await frameAt(records, 999)).png)).toEqual(RED);
    expect(colourOf((await frameAt(records, 2000)).png)).toEqual(BLUE);
    expect(await frameAt(records, 60_000)).toMatchObject({ at: 2000 });
  });

  it("reads the recording no further than the moment", async () => {
    const read: number[] = [];
    async function* stream(): AsyncGenerator<RecordingRecord> {
      for (const record of records) {
        read.push(record.at);
        yield record;
      }
    }
    await frameAt(stream(), 1000);
    expect(read).toEqual([0, 0, 1000, 2000]);
  });

  it("refuses a moment before the screen's first bytes", async () => {
    await expect(frameAt([server(500, serverInit(3, 2))], 100)).rejects.toThrow(RecordingDecodeError);
  });
});
