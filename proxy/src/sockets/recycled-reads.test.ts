import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { createServer, type Server, type Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { createWebSocketStream, WebSocket, WebSocketServer } from "ws";
import { bridgeRfb } from "../rfb/bridge.ts";
import { FAKE_VNC_PASSWORD, fakeVncServer, rfbText } from "../rfb/testing/fake-vnc-server.ts";
import { Encoding, RfbClient } from "../rfb/testing/rfb-client.ts";
import { connectRecycledReads, IDLE_READ_BYTES, READ_BYTES } from "./recycled-reads.ts";

const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

async function listening<T extends Server | WebSocketServer>(server: T): Promise<number> {
  await once(server, "listening");
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no TCP address");
  return address.port;
}

/** A Raw FramebufferUpdate of one rectangle; `pixels` is its whole payload. */
function rawUpdate(width: number, height: number, pixels: Buffer): Buffer {
  const header = Buffer.alloc(16);
  header.writeUInt16BE(1, 2);
  header.writeUInt16BE(width, 8);
  header.writeUInt16BE(height, 10);
  header.writeInt32BE(Encoding.Raw, 12);
  return Buffer.concat([header, pixels]);
}

/**
 * A scripted VNC server over real TCP sends `updates` of fresh random pixels (a ServerCutText between
 * each, which a viewer must not get); the bridge reads them through recycled buffers and writes them
 * on to a real WebSocket whose client stops reading for a while, so that writes queue in the proxy
 * while reads go on into recycled buffers. Every pixel must arrive as it was sent (a buffer recycled
 * before its write completed fails this).
 */
async function relayCheckingPixels(mode: "view" | "control", updates: number): Promise<number> {
  const sent: Buffer[] = [];
  const vnc = createServer(async (socket: Socket) => {
    await fakeVncServer(socket);
    for (let i = 0; i < updates; i++) {
      const pixels = randomBytes(128 * 128 * 4);
      sent.push(pixels);
      if (
        !socket.write(
          Buffer.concat([rawUpdate(128, 128, pixels), Buffer.from([3, 0, 0, 0]), rfbText("clip")]),
        )
      )
        await once(socket, "drain");
    }
  }).listen(0, "127.0.0.1");
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1", perMessageDeflate: false });
  closers.push(
    () => vnc.close(),
    () => wss.close(),
  );
  const [vncPort, wsPort] = await Promise.all([listening(vnc), listening(wss)]);

  const accepted = once(wss, "connection") as Promise<[WebSocket]>;
  const browserSocket = new WebSocket(`ws://127.0.0.1:${wsPort}`, { perMessageDeflate: false });
  const [[serverSide]] = await Promise.all([accepted, once(browserSocket, "open")]);
  const { socket: target, recycle } = connectRecycledReads({ host: "127.0.0.1", port: vncPort });
  await once(target, "connect");
  let recycled = 0;
  const ended = bridgeRfb({
    browser: createWebSocketStream(serverSide, { writableHighWaterMark: 256 * 1024 }),
    target,
    recycleTargetChunk: (chunk) => {
      recycled++;
      recycle(chunk);
    },
    password: FAKE_VNC_PASSWORD,
    mode,
    maxClientMessageBytes: 256 * 1024,
  });
  closers.push(() => target.destroy());

  const client = await RfbClient.connect(createWebSocketStream(browserSocket));
  // Unread, the socket's kernel buffers fill and the relay's writes queue in the process.
  browserSocket.pause();
  await sleep(500);
  browserSocket.resume();
  for (let i = 0; i < updates; i++) {
    const message = await client.readMessage();
    if (mode === "control") expect(await client.readMessage()).toEqual({ type: "cut-text", text: "clip" });
    expect(message.type).toBe("framebuffer-update");
    const [rectangle] = message.type === "framebuffer-update" ? message.rectangles : [];
    expect(rectangle?.pixels?.equals(sent[i] as Buffer)).toBe(true);
  }
  client.close();
  await ended;
  return recycled;
}

describe("connectRecycledReads", () => {
  it("relays every byte intact through the bridge while read buffers are used again, in both modes, two sockets at once", async () => {
    const recycled = await Promise.all([
      relayCheckingPixels("view", 300),
      relayCheckingPixels("control", 300),
    ]);
    // 2 × 300 updates of 64 KiB: most chunks went back to be read into again.
    for (const count of recycled) expect(count).toBeGreaterThan(150);
  });

  it("reads a quiet socket into a small buffer and a busy one into whole buffers", async () => {
    const sizes: number[] = [];
    const server = createServer((socket) => {
      socket.write("hello");
      setTimeout(() => socket.end(randomBytes(1024 * 1024)), 50);
    }).listen(0, "127.0.0.1");
    closers.push(() => server.close());
    const { socket } = connectRecycledReads({ host: "127.0.0.1", port: await listening(server) });
    socket.on("data", (chunk: Buffer) => sizes.push(chunk.buffer.byteLength));
    await once(socket, "end");
    expect(sizes[0]).toBe(IDLE_READ_BYTES);
    expect(sizes.filter((size) => size === READ_BYTES).length).toBeGreaterThan(8);
  });
});
