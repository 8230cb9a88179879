/**
 * Fuzzes the view filter: random valid streams of every client message the proxy frames, cut at
 * random byte boundaries and merged into random chunks, through the filter alone (many streams) and
 * through a whole bridge (fewer, each with its handshake). In `view` mode what reaches the target is
 * parsed on its own terms and must be exactly the stream's non-input messages, in order; in
 * `control` mode it must be the stream, byte for byte.
 *
 * Each run draws a new seed, shown in the suite's name; RFB_FUZZ_SEED=<seed> replays a run.
 */
import { randomInt } from "node:crypto";
import type { Duplex } from "node:stream";
import { describe, expect, it } from "vitest";
import { bridgeRfb } from "./bridge.ts";
import { ClientMessageFilter } from "./client-messages.ts";
import { FAKE_VNC_PASSWORD, fakeVncServer } from "./testing/fake-vnc-server.ts";
import { memoryPair } from "./testing/pairs.ts";
import {
  GENERATED_TYPES,
  type GeneratedMessage,
  Random,
  randomChunks,
  randomMessages,
} from "./testing/random-client-stream.ts";
import { RfbClient } from "./testing/rfb-client.ts";

const SEED = process.env.RFB_FUZZ_SEED ? Number(process.env.RFB_FUZZ_SEED) : randomInt(2 ** 31);
const FILTER_STREAMS = 1_000;
const BRIDGE_STREAMS = 100;
const MAX_MESSAGE_BYTES = 256 * 1024;

/** A failure that says how to replay it. */
function fail(stream: number, what: string): never {
  throw new Error(`${what}\n(stream ${stream} of seed ${SEED}; RFB_FUZZ_SEED=${SEED} replays it)`);
}

/**
 * Splits what reached the target into messages, knowing only the messages a viewer may send
 * (SetPixelFormat, SetEncodings, FramebufferUpdateRequest, EnableContinuousUpdates, ClientFence):
 * anything else there is input that got through, or bytes out of frame.
 */
function parseViewerMessages(data: Buffer, stream: number): Buffer[] {
  const messages: Buffer[] = [];
  for (let at = 0; at < data.length; ) {
    const type = data.readUInt8(at);
    const size =
      type === 0
        ? 20
        : type === 2 && at + 4 <= data.length
          ? 4 + 4 * data.readUInt16BE(at + 2)
          : type === 3 || type === 150
            ? 10
            : type === 248 && at + 9 <= data.length
              ? 9 + data.readUInt8(at + 8)
              : undefined;
    if (size === undefined) fail(stream, `message type ${type} reached the target at byte ${at}`);
    if (at + size > data.length) fail(stream, `a message of type ${type} reached the target cut short`);
    messages.push(data.subarray(at, at + size));
    at += size;
  }
  return messages;
}

/** Checks what reached the target against what a viewer's messages should have become. */
function expectViewed(
  stream: number,
  messages: GeneratedMessage[],
  reached: Buffer,
  dropped: number[],
): void {
  const got = parseViewerMessages(reached, stream);
  const expected = messages.flatMap((message) => (message.view ? [message.view] : []));
  const sent = messages.map((message) => message.name);
  for (let i = 0; i < Math.max(got.length, expected.length); i++) {
    if (!got[i]?.equals(expected[i] ?? Buffer.alloc(0)))
      fail(
        stream,
        `message ${i} reaching the target was ${got[i]?.toString("hex")}, not ${expected[i]?.toString("hex")}; sent: ${sent.join(", ")}`,
      );
  }
  const droppedTypes = messages.filter((message) => !message.view).map((message) => message.type);
  if (dropped.join() !== droppedTypes.join())
    fail(stream, `dropped ${dropped.join()}, not ${droppedTypes.join()}; sent: ${sent.join(", ")}`);
}

function expectControlled(stream: number, messages: GeneratedMessage[], reached: Buffer, dropped: number[]) {
  const sent = Buffer.concat(messages.map((message) => message.bytes));
  if (!reached.equals(sent) || dropped.length > 0) {
    const at = [...sent].findIndex((byte, i) => reached[i] !== byte);
    fail(stream, `${reached.length} of ${sent.length} bytes reached the target, first difference at ${at}`);
  }
}

/** Streams from one seed, with a different sequence for each test so that each replays alone. */
function* streams(count: number, salt: number, viewable: boolean) {
  const random = new Random(SEED ^ salt);
  for (let stream = 0; stream < count; stream++) {
    const messages = randomMessages(random, random.int(1, 50), viewable);
    const chunks = randomChunks(random, Buffer.concat(messages.map((message) => message.bytes)));
    yield { stream, messages, chunks };
  }
}

/** Message types sent in `runs`, to show that every one the filter frames was exercised. */
const typesSent = (runs: { messages: GeneratedMessage[] }[]) =>
  [...new Set(runs.flatMap((run) => run.messages.map((message) => message.type)))].sort((a, b) => a - b);

describe(`view filter fuzz (seed ${SEED})`, () => {
  describe.each(["view", "control"] as const)("%s mode", (mode) => {
    const check = mode === "view" ? expectViewed : expectControlled;

    it(`ClientMessageFilter passes on the right messages of ${FILTER_STREAMS} streams, however chunked`, () => {
      const runs = [...streams(FILTER_STREAMS, mode === "view" ? 0x1 : 0x2, mode === "view")];
      for (const { stream, messages, chunks } of runs) {
        const filter = new ClientMessageFilter({ mode, maxMessageBytes: MAX_MESSAGE_BYTES });
        const forwarded: Buffer[] = [];
        const dropped: number[] = [];
        for (const chunk of chunks) {
          const result = filter.push(chunk);
          if ("violation" in result) fail(stream, `refused a valid stream: ${result.violation.detail}`);
          for (const step of result.steps) {
            if ("dropped" in step) {
              dropped.push(step.dropped);
              continue;
            }
            // Each write to the target is whole messages: the filter never passes on part of one.
            if (mode === "view") parseViewerMessages(step.forward, stream);
            forwarded.push(step.forward);
          }
        }
        check(stream, messages, Buffer.concat(forwarded), dropped);
      }
      expect(typesSent(runs)).toEqual([...GENERATED_TYPES]);
    });

    it(`a bridge passes on the right bytes of ${BRIDGE_STREAMS} streams, however chunked`, async () => {
      const runs = [...streams(BRIDGE_STREAMS, mode === "view" ? 0x3 : 0x4, mode === "view")];
      for (const { stream, messages, chunks } of runs) {
        const { reached, dropped, end } = await throughBridge(mode, chunks);
        if (end !== "browser-closed") fail(stream, `the bridge ended with ${end}`);
        check(stream, messages, reached, dropped);
      }
      expect(typesSent(runs)).toEqual([...GENERATED_TYPES]);
    });
  });
});

/** Sends `chunks` from a browser through a bridge to a scripted server; returns what the server read. */
async function throughBridge(mode: "view" | "control", chunks: Buffer[]) {
  const [browser, proxyBrowserSide] = memoryPair() as [Duplex, Duplex];
  const [proxyTargetSide, target] = memoryPair() as [Duplex, Duplex];
  const dropped: number[] = [];
  const ended = bridgeRfb({
    browser: proxyBrowserSide,
    target: proxyTargetSide,
    password: FAKE_VNC_PASSWORD,
    mode,
    maxClientMessageBytes: MAX_MESSAGE_BYTES,
    onDropped: (type) => dropped.push(type),
  });
  const [server, client] = await Promise.all([fakeVncServer(target), RfbClient.connect(browser)]);
  // What came right behind ClientInit, then everything up to the bridge closing the target's side.
  const received = [server.reader.release()];
  target.on("data", (chunk: Buffer) => received.push(chunk));
  const targetClosed = new Promise((resolve) => target.once("close", resolve));
  target.resume();
  for (const chunk of chunks) client.send(chunk);
  client.close();
  const end = await ended;
  await targetClosed;
  return { reached: Buffer.concat(received), dropped, end: end.reason };
}
