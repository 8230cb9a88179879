import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ProxyMetrics } from "../metrics.ts";
import { bridgeRfb } from "../rfb/bridge.ts";
import { FAKE_VNC_PASSWORD, fakeVncServer } from "../rfb/testing/fake-vnc-server.ts";
import { tcpPair } from "../rfb/testing/pairs.ts";
import { RfbClient } from "../rfb/testing/rfb-client.ts";
import { concatBytes, MAX_RECORD_PAYLOAD, type RecordingRecord, RecordKind, RecordReader } from "./format.ts";
import { FELL_BEHIND, Recorder } from "./recorder.ts";
import { FakeApi } from "./testing/fake-api.ts";

const logger = pino({ level: "silent" });
let api: FakeApi;
let metrics: ProxyMetrics;
const opened: Array<{ destroy(): void }> = [];

beforeEach(async () => {
  api = await new FakeApi().start();
  metrics = new ProxyMetrics();
});
afterEach(async () => {
  for (const stream of opened.splice(0)) stream.destroy();
  await api.close();
});

function record(maxBufferedBytes = 4 * 1024 * 1024, apiUrl = api.url, partMs = 60_000): Recorder {
  return new Recorder({
    recordingId: "rec-1",
    apiUrl,
    authorization: "Bearer service-token",
    maxBufferedBytes,
    partMs,
    metrics,
    logger,
  });
}

/** A recorder whose upload goes in parts of `partMs`. */
const recordInParts = (partMs: number, maxBufferedBytes?: number) =>
  record(maxBufferedBytes, api.url, partMs);

/** Holds api's answers to parts whose body ended, until released. */
function holdAnswers(): () => void {
  let release!: () => void;
  api.hold = new Promise<void>((resolve) => {
    release = resolve;
  });
  return () => {
    api.hold = undefined;
    release();
  };
}

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString();

async function failures(): Promise<Record<string, number>> {
  const { values } = await metrics.recordingsFailed.get();
  return Object.fromEntries(values.map(({ labels, value }) => [String(labels.reason), value]));
}

const active = async () => (await metrics.recordingsActive.get()).values[0]?.value;

const serverBytes = (records: RecordingRecord[]) =>
  Buffer.concat(records.flatMap((r) => (r.kind === RecordKind.SERVER ? [r.bytes] : [])));

/**
 * A control bridge between the fake VNC server and a scripted browser, recorded through its taps,
 * over TCP as in production: each read is an event of its own, between which the upload is sent.
 */
async function recordedBridge(recorder: Recorder, onServerData?: () => void) {
  const [browser, proxyBrowserSide] = await tcpPair();
  const [proxyTargetSide, target] = await tcpPair();
  opened.push(browser, target);
  const ended = bridgeRfb({
    browser: proxyBrowserSide,
    target: proxyTargetSide,
    password: FAKE_VNC_PASSWORD,
    mode: "control",
    maxClientMessageBytes: 256 * 1024,
    onServerData: (data) => {
      recorder.server(data);
      onServerData?.();
    },
    onClientMessage: (message) => recorder.client(message),
  });
  const [server, client] = await Promise.all([fakeVncServer(target), RfbClient.connect(browser)]);
  return { target, server: server.reader, client, ended };
}

/** One full-screen Raw update of the fake desktop (640x480, 32 bpp), every byte `fill`. */
function rawUpdate(fill: number): Buffer {
  const header = Buffer.from([0, 0, 0, 1, 0, 0, 0, 0, 2, 128, 1, 224, 0, 0, 0, 0]);
  return Buffer.concat([header, Buffer.alloc(640 * 480 * 4, fill)]);
}

describe("a recording streamed to api", () => {
  it("arrives as records in order, timed from its start, big server chunks split, and ends complete", async () => {
    const recorder = record();
    const lent = Buffer.from("server-init");
    recorder.server(lent);
    lent.fill(0); // the bridge reuses a lent chunk once written: the recording kept its own copy
    recorder.client(Buffer.from([3, 1, 0, 0, 0, 0, 2, 128, 1, 224]));
    await sleep(40);
    const big = Buffer.alloc(2 * MAX_RECORD_PAYLOAD + 5, 9);
    recorder.server(big);
    await recorder.end({ complete: true });

    const upload = await api.upload();
    expect(await upload.finished).toBe("ended");
    expect(upload.recordingId).toBe("rec-1");
    expect(upload.request.headers).toMatchObject({
      authorization: "Bearer service-token",
      "content-type": "application/octet-stream",
    });
    const records = upload.records();
    expect(records.map((r) => r.kind)).toEqual([
      RecordKind.SERVER,
      RecordKind.CLIENT,
      RecordKind.SERVER,
      RecordKind.SERVER,
      RecordKind.SERVER,
      RecordKind.END,
    ]);
    const [init, request, ...rest] = records;
    expect(init).toMatchObject({ bytes: new Uint8Array(Buffer.from("server-init")) });
    expect(request).toMatchObject({ bytes: new Uint8Array([3, 1, 0, 0, 0, 0, 2, 128, 1, 224]) });
    expect(init?.at).toBeLessThan(40);
    expect(rest[0]?.at).toBeGreaterThanOrEqual(35);
    expect(rest.slice(0, 3).map((r) => (r.kind === RecordKind.SERVER ? r.bytes.length : 0))).toEqual([
      MAX_RECORD_PAYLOAD,
      MAX_RECORD_PAYLOAD,
      5,
    ]);
    expect(serverBytes(rest).equals(big)).toBe(true);
    expect(records.at(-1)).toMatchObject({ kind: RecordKind.END, complete: true });
    expect(await active()).toBe(0);
    expect((await metrics.recordedBytes.get()).values[0]?.value).toBe(upload.bytes);
    expect(await failures()).toEqual({});
  });

  it("stops when api answers 507 (its store failed), while the live bridge goes on relaying", async () => {
    api.answer = "store-full";
    const recorder = record();
    const { target, server, client } = await recordedBridge(recorder);
    await recorder.settled;
    expect(await failures()).toEqual({ refused: 1 });
    expect(await active()).toBe(0);
    const recorded = (await metrics.recordedBytes.get()).values[0]?.value;

    // the socket is none the worse: both ways still flow, and nothing more is recorded
    target.write(Buffer.from([2]));
    expect(await client.readMessage()).toEqual({ type: "bell" });
    client.pointerEvent(10, 20, 1);
    expect([...(await server.read(6))]).toEqual([5, 1, 0, 10, 0, 20]);
    expect((await metrics.recordedBytes.get()).values[0]?.value).toBe(recorded);
    await recorder.end({ complete: true });
    expect((await api.upload()).records().some((r) => r.kind === RecordKind.END)).toBe(false);
  });

  it("ends incomplete when api stops reading, holding no more than its buffer, the live socket unaffected", async () => {
    api.answer = "stall";
    const maxBufferedBytes = 1024 * 1024;
    const recorder = record(maxBufferedBytes);
    let peak = 0;
    const { target, client } = await recordedBridge(recorder, () => {
      peak = Math.max(peak, recorder.bufferedBytes);
    });
    const upload = await api.upload();

    // 32 full-screen updates, 39 MB: far more than the buffer and the sockets between hold
    const updates = 32;
    const writing = (async () => {
      for (let i = 0; i < updates; i++) if (!target.write(rawUpdate(i))) await once(target, "drain");
    })();
    for (let i = 0; i < updates; i++) {
      const [rectangle] = await client.readUpdate();
      expect(rectangle?.pixels?.every((byte) => byte === i)).toBe(true);
    }
    await writing;
    expect(await failures()).toEqual({ "fell-behind": 1 });
    // its END is the one record written past the buffer
    expect(peak).toBeLessThanOrEqual(maxBufferedBytes + 128);

    upload.resume();
    expect(await upload.finished).toBe("ended");
    await recorder.settled;
    const records = upload.records();
    expect(records.at(-1)).toMatchObject({ kind: RecordKind.END, ...FELL_BEHIND });
    const recorded = serverBytes(records);
    const relayed = Buffer.concat([
      recorded.subarray(0, 36),
      ...Array.from({ length: updates }, (_, i) => rawUpdate(i)),
    ]);
    expect(recorded.length).toBeLessThan(relayed.length);
    expect(recorded.length).toBeGreaterThan(36);
    expect(recorded.equals(relayed.subarray(0, recorded.length))).toBe(true);
    expect(await active()).toBe(0);
  });

  it("stops quietly when api cannot be reached", async () => {
    const recorder = record(1024 * 1024, "http://127.0.0.1:9");
    recorder.server(Buffer.from("server-init"));
    await recorder.settled;
    expect(await failures()).toEqual({ unreachable: 1 });
    expect(() => recorder.server(Buffer.from("more"))).not.toThrow();
    await recorder.end({ complete: true });
    expect(await active()).toBe(0);
  });
});

describe("a recording uploaded in parts", () => {
  it("ends each request after partMs between records, each part continuing where the last stopped, only the last with END", async () => {
    const recorder = recordInParts(100);
    const started = performance.now();
    for (let i = 0; i < 12; i++) {
      recorder.server(Buffer.from(`update ${i}`));
      recorder.client(Buffer.from([5, 0, 0, i, 0, i]));
      await sleep(40);
    }
    await recorder.end({ complete: true });
    const elapsed = performance.now() - started;

    const parts = api.parts("rec-1");
    expect(parts.length).toBeGreaterThanOrEqual(3);
    // a part every 100 ms at most (each waits for the answer to the one before)
    expect(parts.length).toBeLessThanOrEqual(Math.ceil(elapsed / 100) + 1);
    let offset = 0;
    for (const [index, part] of parts.entries()) {
      expect(await part.finished).toBe("ended");
      expect(part.offset).toBe(offset);
      expect(part.request.headers.authorization).toBe("Bearer service-token");
      // whole records: the next part starts on a record boundary
      const reader = new RecordReader();
      const records = reader.push(concatBytes(part.chunks));
      expect(reader.partialBytes).toBe(0);
      expect(records.some((r) => r.kind === RecordKind.END)).toBe(index === parts.length - 1);
      offset += part.bytes;
    }
    expect(api.stored.get("rec-1")).toBe(offset);

    // read as one stream: nothing lost, nothing reordered, time never going back
    const records = api.records("rec-1");
    expect(records.map((r) => (r.kind === RecordKind.END ? "END" : text(r.bytes)))).toEqual([
      ...Array.from({ length: 12 }, (_, i) => [
        `update ${i}`,
        text(new Uint8Array([5, 0, 0, i, 0, i])),
      ]).flat(),
      "END",
    ]);
    const times = records.map((r) => r.at);
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(records.at(-1)).toMatchObject({ kind: RecordKind.END, complete: true });
    expect((await metrics.recordedBytes.get()).values[0]?.value).toBe(offset);
    expect(await active()).toBe(0);
    expect(await failures()).toEqual({});
  });

  it("queues what the screen sends while a part's answer is awaited, sends it first in the next part, and ends there", async () => {
    const release = holdAnswers();
    const recorder = recordInParts(50);
    recorder.server(Buffer.from("first"));
    const first = await api.upload(0);
    expect(await first.finished).toBe("ended");

    // the part is ended, its answer held: records wait, in order, and the writes return at once
    for (let i = 0; i < 5; i++) recorder.server(Buffer.from(`queued ${i}`));
    expect(recorder.bufferedBytes).toBe(5 * (9 + "queued 0".length));
    const ending = recorder.end({ complete: true });
    await sleep(100);
    expect(api.uploads).toHaveLength(1);
    release();
    await ending;

    const parts = api.parts("rec-1");
    expect(parts).toHaveLength(2);
    expect(parts[1]?.offset).toBe(first.bytes);
    expect(parts[1]?.records().map((r) => (r.kind === RecordKind.END ? "END" : text(r.bytes)))).toEqual([
      ...Array.from({ length: 5 }, (_, i) => `queued ${i}`),
      "END",
    ]);
    expect(recorder.bufferedBytes).toBe(0);
    expect(await active()).toBe(0);
    expect(await failures()).toEqual({});
  });

  it("falls behind when api is slow to answer a part: what waits stays within the buffer, and END follows what fit", async () => {
    const release = holdAnswers();
    const maxBufferedBytes = 64 * 1024;
    const recorder = recordInParts(50, maxBufferedBytes);
    recorder.server(Buffer.from("first"));
    expect(await (await api.upload(0)).finished).toBe("ended");

    let peak = 0;
    const sent = Array.from({ length: 20 }, (_, i) => Buffer.alloc(8 * 1024, i));
    for (const update of sent) {
      recorder.server(update);
      peak = Math.max(peak, recorder.bufferedBytes);
    }
    expect(await failures()).toEqual({ "fell-behind": 1 });
    expect(peak).toBeLessThanOrEqual(maxBufferedBytes);
    release();
    await recorder.settled;

    const records = api.records("rec-1");
    expect(records.at(-1)).toMatchObject({ kind: RecordKind.END, ...FELL_BEHIND });
    const kept = serverBytes(records);
    expect(kept.length).toBeGreaterThan(5 + 8 * 1024);
    expect(kept.equals(Buffer.concat([Buffer.from("first"), ...sent]).subarray(0, kept.length))).toBe(true);
    expect(await active()).toBe(0);
  });

  it("stops recording when api refuses a part (409: it does not continue what api holds)", async () => {
    api.answer = "mismatch";
    const recorder = recordInParts(50);
    recorder.server(Buffer.from("first"));
    await recorder.settled;
    expect(await failures()).toEqual({ refused: 1 });
    expect(await active()).toBe(0);
    expect(() => recorder.server(Buffer.from("more"))).not.toThrow();
    await recorder.end({ complete: true });
    await sleep(100);
    expect(api.parts("rec-1")).toHaveLength(2);
    expect(api.records("rec-1").some((r) => r.kind === RecordKind.END)).toBe(false);
  });

  it("sends a part even when the screen was still, so no request outlives partMs", async () => {
    const recorder = recordInParts(50);
    recorder.server(Buffer.from("first"));
    await sleep(180);
    recorder.server(Buffer.from("later"));
    await recorder.end({ complete: true });
    const parts = api.parts("rec-1");
    expect(parts.length).toBeGreaterThanOrEqual(3);
    expect(parts.some((part) => part.bytes === 0)).toBe(true);
    expect(api.records("rec-1").map((r) => (r.kind === RecordKind.END ? "END" : text(r.bytes)))).toEqual([
      "first",
      "later",
      "END",
    ]);
  });
});
