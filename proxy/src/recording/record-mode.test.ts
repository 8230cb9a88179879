/**
 * How a `record` socket's recording ends, through the real proxy, with the fake api taking the
 * upload and the fake VNC server as the screen.
 */
import { once } from "node:events";
import { createServer, type Server, type Socket } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { CapabilityKeyring, mintCapability, SCREEN_PATH, SCREEN_PROTOCOL } from "../capability/index.ts";
import { fakeVncServer } from "../rfb/testing/fake-vnc-server.ts";
import { parseProxyConfig, type RunningProxy, startProxy } from "../server.ts";
import { RecordKind } from "./format.ts";
import { FakeApi } from "./testing/fake-api.ts";

const KEY = "q".repeat(40);
let api: FakeApi;
let proxy: RunningProxy;
let screen: Server;
/** The proxy's connections to the screen, as the fake VNC server sees them. */
let screenSockets: Socket[];

beforeEach(async () => {
  api = await new FakeApi().start();
  proxy = await startProxy(
    parseProxyConfig({
      SCREEN_CAPABILITY_KEY: KEY,
      PROXY_PORT: "0",
      CUBICLE_API_URL: api.url,
      LOG_LEVEL: "silent",
    }),
  );
  screenSockets = [];
  screen = createServer((socket) => {
    screenSockets.push(socket);
    void fakeVncServer(socket).catch(() => undefined);
  }).listen(0, "127.0.0.1");
  await once(screen, "listening");
});

afterEach(async () => {
  await proxy.close();
  await api.close();
  screen.close();
});

async function openRecorder(port = (screen.address() as { port: number }).port) {
  const { token } = await mintCapability(new CapabilityKeyring({ current: KEY }), {
    subject: "recorder:ses-2",
    workspaceId: "ws-1",
    computerId: "cmp-1",
    screen: 0,
    mode: "record",
    recordingId: "rec-9",
    target: { kind: "vnc", host: "127.0.0.1", port, password: "s3cret" },
  });
  const socket = new WebSocket(`${proxy.url.replace(/^http/, "ws")}${SCREEN_PATH}`, [SCREEN_PROTOCOL, token]);
  const closed = new Promise<[number, string]>((resolve) =>
    socket.once("close", (code, reason) => resolve([code, reason.toString()])),
  );
  await once(socket, "open");
  return { socket, closed, upload: await api.upload() };
}

describe("a record socket's recording", () => {
  it("is complete when the screen goes away, and api hears it as the screen closing", async () => {
    const { closed, upload } = await openRecorder();
    while (!upload.records().some((r) => r.kind === RecordKind.CLIENT))
      await new Promise((r) => setTimeout(r, 20));
    for (const socket of screenSockets) socket.end();
    expect(await closed).toEqual([1000, "screen closed"]);
    expect(await upload.finished).toBe("ended");
    expect(upload.records().at(-1)).toEqual({ kind: RecordKind.END, at: expect.any(Number), complete: true });
  });

  it("is incomplete when the proxy shuts down under it, and reaches api before the proxy is gone", async () => {
    const { closed, upload } = await openRecorder();
    while (!upload.records().some((r) => r.kind === RecordKind.CLIENT))
      await new Promise((r) => setTimeout(r, 20));
    let delivered = false;
    void upload.finished.then(() => {
      delivered = true;
    });
    await proxy.close();
    // a stopping proxy waits for its recordings' ends to reach api
    expect(delivered).toBe(true);
    expect((await closed)[0]).toBe(1001);
    expect(await upload.finished).toBe("ended");
    expect(upload.records().at(-1)).toMatchObject({ complete: false, reason: "the proxy shut down" });
  });

  it("is incomplete, holding nothing, when the screen cannot be reached", async () => {
    const { closed, upload } = await openRecorder(9);
    expect(await closed).toEqual([1011, "screen unavailable"]);
    expect(await upload.finished).toBe("ended");
    expect(upload.records()).toEqual([
      {
        kind: RecordKind.END,
        at: expect.any(Number),
        complete: false,
        reason: "the screen could not be reached",
      },
    ]);
  });
});
