/**
 * A `record` socket end to end: the real proxy, api stood in for by the fake (which takes the
 * upload), and a real x11vnc on Xvfb as the screen.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { CapabilityKeyring, mintCapability, SCREEN_PATH, SCREEN_PROTOCOL } from "../capability/index.ts";
import { pixelSizes, ServerMessageFilter } from "../rfb/server-messages.ts";
import { startDesktop, type TestDesktop } from "../rfb/testing/desktop.ts";
import { parseProxyConfig, type RunningProxy, startProxy } from "../server.ts";
import { type RecordingRecord, RecordKind } from "./format.ts";
import { NOVNC_PIXEL_FORMAT } from "./screen-viewer.ts";
import { FakeApi, type Upload } from "./testing/fake-api.ts";

const KEY = "r".repeat(40);
let desktop: TestDesktop;
let api: FakeApi;
let proxy: RunningProxy;

beforeAll(async () => {
  desktop = await startDesktop({ password: "record42" });
  api = await new FakeApi().start();
  proxy = await startProxy(
    parseProxyConfig({
      SCREEN_CAPABILITY_KEY: KEY,
      PROXY_PORT: "0",
      CUBICLE_API_URL: api.url,
      PROXY_ALLOWED_ORIGINS: "https://cubicle.example.com",
      LOG_LEVEL: "silent",
    }),
  );
});

afterAll(async () => {
  await proxy?.close();
  await api?.close();
  await desktop?.stop();
});

const serverBytes = (records: RecordingRecord[]) =>
  Buffer.concat(records.flatMap((r) => (r.kind === RecordKind.SERVER ? [r.bytes] : [])));

async function until(what: string, check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe("a record socket", () => {
  it("records the screen with nobody watching, sends api's socket nothing, and ends complete when api closes it", async () => {
    const { token } = await mintCapability(new CapabilityKeyring({ current: KEY }), {
      subject: "recorder:ses-1",
      workspaceId: "ws-1",
      computerId: "cmp-1",
      screen: 0,
      mode: "record",
      recordingId: "rec-7",
      target: { kind: "vnc", host: "127.0.0.1", port: desktop.port, password: desktop.password },
    });
    // as api connects: from Node, with no Origin
    const socket = new WebSocket(`${proxy.url.replace(/^http/, "ws")}${SCREEN_PATH}`, [
      SCREEN_PROTOCOL,
      token,
    ]);
    const received: unknown[] = [];
    socket.on("message", (data) => received.push(data));
    await new Promise((resolve, reject) => socket.once("open", resolve).once("error", reject));

    const upload: Upload = await api.upload();
    expect(upload.recordingId).toBe("rec-7");
    // the screen's messages after ServerInit (24 bytes, then the desktop's name)
    const updates = (records: RecordingRecord[]) => {
      const stream = serverBytes(records);
      return stream.length < 24 ? Buffer.alloc(0) : stream.subarray(24 + stream.readUInt32BE(20));
    };
    await until("a first update", () => updates(upload.records()).length > 0);
    const health = (await (await fetch(`${proxy.url}/health`)).json()) as { sockets: Record<string, number> };
    expect(health.sockets).toMatchObject({ view: 0, control: 0, record: 1 });

    // a change on the screen is seen without anyone asking: the viewer's timed incremental requests
    const before = updates(upload.records()).length;
    await desktop.movePointer(600, 400);
    await until("an update after the pointer moved", () => updates(upload.records()).length > before);

    socket.close();
    expect(await upload.finished).toBe("ended");
    const records = upload.records();
    expect(records.at(-1)).toMatchObject({ kind: RecordKind.END, complete: true });
    expect(received).toEqual([]);

    // SERVER bytes: ServerInit (the desktop's 1280x800), then whole RFB messages, updates first
    const stream = serverBytes(records);
    expect([stream.readUInt16BE(0), stream.readUInt16BE(2)]).toEqual([1280, 800]);
    const afterInit = updates(records);
    expect(afterInit.readUInt8(0)).toBe(0); // FramebufferUpdate
    const framing = new ServerMessageFilter(
      pixelSizes(NOVNC_PIXEL_FORMAT) ?? { bytesPerPixel: 4, tightPixelBytes: 3 },
    );
    expect(framing.push(afterInit)).not.toHaveProperty("violation");

    // CLIENT bytes: the proxy's own pixel format and encodings first, then only update requests
    const client = records.flatMap((r) => (r.kind === RecordKind.CLIENT ? [Buffer.from(r.bytes)] : []));
    expect(client[0]?.subarray(4)).toEqual(NOVNC_PIXEL_FORMAT);
    expect(client[1]?.readUInt8(0)).toBe(2);
    expect(client.slice(2).every((message) => message.readUInt8(0) === 3)).toBe(true);
    expect(client.length).toBeGreaterThan(3);

    // api's own socket is not someone at the computer, nor a person whose access is checked
    const asked = ["/internal/proxy/access", "/internal/proxy/activity"];
    expect(api.otherCalls.filter((path) => asked.includes(path))).toEqual([]);
  });
});
