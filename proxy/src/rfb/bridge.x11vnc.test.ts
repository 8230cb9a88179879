/**
 * The bridge against a real x11vnc on Xvfb (no -viewonly: the proxy's filter is what keeps a viewer's
 * input off the desktop), driven by the scripted RFB client standing in for noVNC.
 */
import { once } from "node:events";
import { connect } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bridgeRfb, type RfbBridgeEnd } from "./bridge.ts";
import { ClientMessageType } from "./client-messages.ts";
import { startDesktop, type TestDesktop } from "./testing/desktop.ts";
import { tcpPair } from "./testing/pairs.ts";
import { Encoding, RfbClient } from "./testing/rfb-client.ts";

const XK_a = 0x61;
const XK_Return = 0xff0d;

let desktop: TestDesktop;

beforeAll(async () => {
  desktop = await startDesktop({ password: "pixels42" });
});

afterAll(async () => {
  await desktop?.stop();
});

async function openBridge(mode: "view" | "control", password = desktop.password) {
  const target = connect(desktop.port, "127.0.0.1");
  await once(target, "connect");
  const [browser, proxyBrowserSide] = await tcpPair();
  const dropped: number[] = [];
  let clientBytes = 0;
  const ended: Promise<RfbBridgeEnd> = bridgeRfb({
    browser: proxyBrowserSide,
    target,
    password,
    mode,
    maxClientMessageBytes: 256 * 1024,
    onDropped: (type) => dropped.push(type),
    onClientBytes: (n) => {
      clientBytes += n;
    },
  });
  return { browser, ended, dropped, clientBytes: () => clientBytes };
}

/** The input a user's first moments produce: a move, a click, a key stroke. */
function sendInput(client: RfbClient) {
  client.pointerEvent(100, 200);
  client.pointerEvent(100, 200, 1);
  client.pointerEvent(100, 200, 0);
  client.keyEvent(XK_a, true);
  client.keyEvent(XK_a, false);
  client.keyEvent(XK_Return, true);
  client.keyEvent(XK_Return, false);
}

async function pointerAfter(ms: number, until?: (at: { x: number; y: number }) => boolean) {
  const deadline = Date.now() + ms;
  let at = await desktop.pointer();
  while (Date.now() < deadline && !until?.(at)) {
    await sleep(100);
    at = await desktop.pointer();
  }
  return at;
}

describe("bridgeRfb with x11vnc", () => {
  it.each(["view", "control"] as const)("shows the desktop in %s mode", async (mode) => {
    const { browser, ended } = await openBridge(mode);
    const client = await RfbClient.connect(browser);
    expect(client.serverInit).toMatchObject({ width: 1280, height: 800 });
    expect(client.serverInit.pixelFormat.bitsPerPixel).toBe(32);

    client.setEncodings([Encoding.Raw, Encoding.DesktopSize]);
    client.requestUpdate({ incremental: false });
    const rectangles = await client.readUpdate();
    const raw = rectangles.filter((rectangle) => rectangle.encoding === Encoding.Raw);
    expect(raw.length).toBeGreaterThan(0);
    // A full (non-incremental) request is answered with pixels for the whole screen.
    const area = raw.reduce((sum, rectangle) => sum + rectangle.width * rectangle.height, 0);
    expect(area).toBeGreaterThanOrEqual(1280 * 800);
    for (const rectangle of raw)
      expect(rectangle.pixels?.length).toBe(rectangle.width * rectangle.height * 4);

    client.close();
    expect(await ended).toEqual({ reason: "browser-closed" });
  });

  it("keeps a viewer's pointer and keys off the desktop", async () => {
    await desktop.movePointer(10, 10);
    const { browser, ended, dropped } = await openBridge("view");
    const client = await RfbClient.connect(browser);
    sendInput(client);
    // An update request behind the input: once it is answered, x11vnc has read everything before it.
    client.requestUpdate({ incremental: false, width: 16, height: 16 });
    await client.readUpdate();

    expect(await pointerAfter(1500)).toEqual({ x: 10, y: 10 });
    expect(dropped).toEqual([
      ...Array(3).fill(ClientMessageType.PointerEvent),
      ...Array(4).fill(ClientMessageType.KeyEvent),
    ]);
    client.close();
    expect(await ended).toEqual({ reason: "browser-closed" });
  });

  it("lets a controller's pointer through", async () => {
    await desktop.movePointer(10, 10);
    const { browser, ended, dropped, clientBytes } = await openBridge("control");
    const client = await RfbClient.connect(browser);
    sendInput(client);

    client.requestUpdate({ incremental: false, width: 16, height: 16 });
    await client.readUpdate();

    expect(await pointerAfter(5000, (at) => at.x === 100 && at.y === 200)).toEqual({ x: 100, y: 200 });
    expect(dropped).toEqual([]);
    // ClientInit, the input and the update request, all forwarded.
    expect(clientBytes()).toBe(1 + 3 * 6 + 4 * 8 + 10);
    client.close();
    expect(await ended).toEqual({ reason: "browser-closed" });
  });

  it("withholds what is selected and copied on the desktop from a viewer, and gives it to a controller", async () => {
    const viewing = await openBridge("view");
    const controlling = await openBridge("control");
    const viewer = await RfbClient.connect(viewing.browser);
    const controller = await RfbClient.connect(controlling.browser);
    const nonce = Math.random().toString(36).slice(2, 10);
    await desktop.select(`primary-${nonce}`, "PRIMARY");
    await desktop.select(`clipboard-${nonce}`, "CLIPBOARD");

    // x11vnc sends a selection to all its clients at once: once the controller has both, the
    // viewer's share was sent too, and an update request answered behind it flushes it through
    const controllerTexts: string[] = [];
    while (
      ![`primary-${nonce}`, `clipboard-${nonce}`].every((text) =>
        controllerTexts.some((got) => got.includes(text)),
      )
    ) {
      const message = await controller.readMessage();
      if (message.type === "cut-text") controllerTexts.push(message.text);
    }
    viewer.requestUpdate({ incremental: false, width: 16, height: 16 });
    const viewerMessages = [];
    for (;;) {
      const message = await viewer.readMessage();
      viewerMessages.push(message.type);
      if (message.type === "framebuffer-update") break;
    }
    expect(viewerMessages).toEqual(["framebuffer-update"]);

    viewer.close();
    controller.close();
    expect(await viewing.ended).toEqual({ reason: "browser-closed" });
    expect(await controlling.ended).toEqual({ reason: "browser-closed" });
  });

  it("ends with target-auth-failed on a wrong password, before the browser hears anything", async () => {
    const { browser, ended } = await openBridge("control", "not-it");
    let heard = 0;
    browser.on("data", (chunk: Buffer) => {
      heard += chunk.length;
    });
    const end = await ended;
    expect(end.reason).toBe("target-auth-failed");
    expect(end.detail).toBe("password check failed!"); // x11vnc's own words
    expect(heard).toBe(0);
  });
});
