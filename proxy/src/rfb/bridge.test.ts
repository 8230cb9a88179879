import { once } from "node:events";
import type { Duplex } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { bridgeRfb, type RfbBridgeEnd, type RfbBridgeOptions } from "./bridge.ts";
import { ByteReader } from "./byte-reader.ts";
import { fakeVncServer, FAKE_VNC_PASSWORD as PASSWORD, rfbText, u32 } from "./testing/fake-vnc-server.ts";
import { memoryPair, tcpPair } from "./testing/pairs.ts";
import { RfbClient } from "./testing/rfb-client.ts";

/** The browser's side of the handshake, by hand; the reader is left positioned after ServerInit. */
async function browserHandshake(browser: Duplex): Promise<ByteReader> {
  const reader = new ByteReader(browser);
  await reader.read(12);
  browser.write("RFB 003.008\n");
  await reader.read(2);
  browser.write(Buffer.from([1]));
  await reader.read(4);
  browser.write(Buffer.from([1]));
  const fixed = await reader.read(24);
  await reader.read(fixed.readUInt32BE(20));
  return reader;
}

/** A bridge between a scripted browser end and a scripted server end, both in memory unless said otherwise. */
function setup(overrides: Partial<RfbBridgeOptions> = {}, pairs = [memoryPair(), memoryPair()]) {
  const [[browser, proxyBrowserSide], [proxyTargetSide, target]] = pairs as [
    [Duplex, Duplex],
    [Duplex, Duplex],
  ];
  const counters = { client: 0, server: 0, dropped: [] as number[] };
  const ended: Promise<RfbBridgeEnd> = bridgeRfb({
    browser: proxyBrowserSide,
    target: proxyTargetSide,
    password: PASSWORD,
    mode: "control",
    maxClientMessageBytes: 256 * 1024,
    onClientBytes: (n) => {
      counters.client += n;
    },
    onServerBytes: (n) => {
      counters.server += n;
    },
    onDropped: (type) => counters.dropped.push(type),
    ...overrides,
  });
  return { browser, target, proxyBrowserSide, proxyTargetSide, counters, ended };
}

describe("bridgeRfb handshakes", () => {
  it("authenticates to the target with the password and lets the browser in with None", async () => {
    const { browser, target, ended } = setup();
    const [server, client] = await Promise.all([fakeVncServer(target), RfbClient.connect(browser)]);
    expect(server.answered).toBe("RFB 003.008\n");
    expect(server.chosen).toBe(2);
    expect(client.serverInit).toMatchObject({ width: 640, height: 480, name: "fake desktop" });
    expect(client.serverInit.pixelFormat).toMatchObject({ bitsPerPixel: 32, depth: 24, trueColour: true });
    client.close();
    expect(await ended).toEqual({ reason: "browser-closed" });
  });

  it("works over real TCP sockets too", async () => {
    const { browser, target, ended } = setup({}, [await tcpPair(), await tcpPair()]);
    const [, client] = await Promise.all([fakeVncServer(target), RfbClient.connect(browser)]);
    expect(client.serverInit.width).toBe(640);
    const browserClosed = once(browser, "close");
    target.end();
    expect(await ended).toEqual({ reason: "target-closed" });
    await browserClosed;
  });

  it("always asks the target for a shared session", async () => {
    const { browser, target } = setup();
    const [server] = await Promise.all([
      fakeVncServer(target),
      RfbClient.connect(browser, { shared: false }),
    ]);
    expect(server.clientInit).toBe(1);
  });

  it("ends with target-auth-failed and the server's reason on a wrong password", async () => {
    const { browser, target, ended } = setup({ password: "wrong" });
    void fakeVncServer(target);
    const connecting = RfbClient.connect(browser).catch((error: Error) => error);
    expect(await ended).toEqual({ reason: "target-auth-failed", detail: "Authentication failed" });
    expect(await connecting).toBeInstanceOf(Error);
  });

  it.each(["003.003", "003.007"])(
    "speaks RFB %s to an older target and RFB 3.8 to the browser",
    async (version) => {
      const { browser, target } = setup();
      const [server, client] = await Promise.all([
        fakeVncServer(target, { version }),
        RfbClient.connect(browser),
      ]);
      expect(server.answered).toBe(`RFB ${version}\n`);
      expect(client.serverInit.name).toBe("fake desktop");
    },
  );

  it("answers 3.8 to a target offering a later version", async () => {
    const { browser, target } = setup();
    const [server] = await Promise.all([
      fakeVncServer(target, { version: "003.889" }),
      RfbClient.connect(browser),
    ]);
    expect(server.answered).toBe("RFB 003.008\n");
  });

  it.each(["003.003", "003.007", "003.008"])(
    "uses None when there is no password (target %s)",
    async (version) => {
      const { browser, target } = setup({ password: undefined });
      const [server] = await Promise.all([
        fakeVncServer(target, { version, securityTypes: [1] }),
        RfbClient.connect(browser),
      ]);
      expect(server.chosen).toBe(1);
    },
  );

  it.each([3, 7, 8] as const)("lets in a browser speaking RFB 3.%i", async (minor) => {
    const { browser, target } = setup();
    const [, client] = await Promise.all([
      fakeVncServer(target),
      RfbClient.connect(browser, { version: minor }),
    ]);
    expect(client.serverInit.width).toBe(640);
  });

  it.each([
    [
      "the target wants a password that is not given",
      { securityTypes: [2] },
      undefined,
      /requires a password|none usable/,
    ],
    ["the target offers nothing usable", { securityTypes: [16, 19] }, PASSWORD, /\[16, 19\]/],
    [
      "the target refuses",
      { securityTypes: [] },
      PASSWORD,
      /target refused: Authentication failed|target refused/,
    ],
  ] as const)("ends with handshake-failed when %s", async (_, serverOptions, password, detail) => {
    const { target, ended } = setup({ password });
    void fakeVncServer(target, { ...serverOptions, securityTypes: [...serverOptions.securityTypes] }).catch(
      () => {},
    );
    if (serverOptions.securityTypes.length === 0) target.write(rfbText("too many connections"));
    const end = await ended;
    expect(end.reason).toBe("handshake-failed");
    expect(end.detail).toMatch(detail);
  });

  it("ends with handshake-failed when the target does not speak RFB", async () => {
    const { target, ended } = setup();
    target.write("HTTP/1.1 400 Bad Request\r\n\r\n");
    expect(await ended).toMatchObject({ reason: "handshake-failed" });
  });

  it("ends with handshake-failed when the browser asks for a version it cannot have", async () => {
    const { browser, target, ended } = setup();
    void fakeVncServer(target).catch(() => {});
    const reader = new ByteReader(browser);
    expect((await reader.read(12)).toString()).toBe("RFB 003.008\n");
    browser.write("RFB 004.001\n");
    expect(await ended).toMatchObject({ reason: "handshake-failed" });
  });

  it("ends with handshake-failed when the browser chooses another security type", async () => {
    const { browser, target, ended } = setup();
    void fakeVncServer(target).catch(() => {});
    const reader = new ByteReader(browser);
    await reader.read(12);
    browser.write("RFB 003.008\n");
    expect([...(await reader.read(2))]).toEqual([1, 1]);
    browser.write(Buffer.from([2]));
    expect(await ended).toEqual({ reason: "handshake-failed", detail: "browser chose security type 2" });
    // A 3.8 client is told why.
    expect((await reader.read(4)).readUInt32BE(0)).toBe(1);
  });

  it("ends with handshake-failed when a handshake stalls, closing both sides", async () => {
    const { browser, target, ended, proxyBrowserSide, proxyTargetSide } = setup({ handshakeTimeoutMs: 200 });
    target.resume();
    browser.resume();
    const started = Date.now();
    expect(await ended).toEqual({ reason: "handshake-failed", detail: "handshake timed out" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(proxyBrowserSide.destroyed && proxyTargetSide.destroyed).toBe(true);
  });

  it("ends with target-closed when the target goes away mid-handshake", async () => {
    const { target, ended } = setup();
    target.write("RFB 003.008\n");
    await sleep(10);
    target.destroy();
    expect(await ended).toEqual({ reason: "target-closed", detail: "during the handshake" });
  });
});

describe("bridgeRfb relay", () => {
  async function connected(overrides: Partial<RfbBridgeOptions> = {}) {
    const bridge = setup(overrides);
    const [server, client] = await Promise.all([
      fakeVncServer(bridge.target),
      RfbClient.connect(bridge.browser),
    ]);
    return { ...bridge, server: server.reader, client };
  }

  it("forwards input in control mode and relays server messages unchanged", async () => {
    const { client, server, target, counters } = await connected();
    client.pointerEvent(100, 200, 1);
    client.keyEvent(0x61, true);
    expect([...(await server.read(6))]).toEqual([5, 1, 0, 100, 0, 200]);
    expect([...(await server.read(8))]).toEqual([4, 1, 0, 0, 0, 0, 0, 0x61]);
    target.write(Buffer.from([2])); // Bell
    expect(await client.readMessage()).toEqual({ type: "bell" });
    expect(counters).toEqual({ client: 1 + 6 + 8, server: 24 + 12 + 1, dropped: [] });
  });

  it("drops input in view mode but forwards what shapes the picture", async () => {
    const { client, server, counters } = await connected({ mode: "view" });
    client.pointerEvent(100, 200);
    client.keyEvent(0x61, true);
    client.cutText("hello");
    client.requestUpdate({ incremental: true });
    // The update request arrives first: nothing before it was forwarded.
    expect((await server.read(10)).readUInt8(0)).toBe(3);
    expect(counters.dropped).toEqual([5, 4, 6]);
    expect(counters.client).toBe(1 + 10);
  });

  it("withholds the server's cut texts from a viewer, between its updates, and relays them to a controller", async () => {
    const update = Buffer.from([0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4]); // one Raw pixel
    const cutText = Buffer.concat([Buffer.from([3, 0, 0, 0]), rfbText("secret")]);
    const extended = Buffer.concat([Buffer.from([3, 0, 0, 0]), u32(-8 >>> 0), u32(0x10000001), u32(0)]);
    for (const mode of ["view", "control"] as const) {
      const { client, target, counters } = await connected({ mode });
      target.write(Buffer.concat([update, cutText, update, extended, Buffer.from([2])]));
      const types: string[] = [];
      for (let i = 0; i < (mode === "view" ? 3 : 5); i++) types.push((await client.readMessage()).type);
      if (mode === "view") {
        expect(types).toEqual(["framebuffer-update", "framebuffer-update", "bell"]);
        expect(counters.server).toBe(24 + 12 + 2 * update.length + 1);
      } else {
        expect(types).toEqual(["framebuffer-update", "cut-text", "framebuffer-update", "cut-text", "bell"]);
      }
    }
  });

  it("forwards client messages sent before ServerInit, after ClientInit", async () => {
    const { browser, target } = setup();
    const serving = fakeVncServer(target);
    const reader = new ByteReader(browser);
    await reader.read(12);
    browser.write("RFB 003.008\n");
    await reader.read(2);
    browser.write(Buffer.from([1]));
    await reader.read(4);
    // ClientInit with a PointerEvent right behind it, in one write.
    browser.write(Buffer.from([0, 5, 0, 0, 7, 0, 9]));
    const { reader: server, clientInit } = await serving;
    expect(clientInit).toBe(1);
    expect([...(await server.read(6))]).toEqual([5, 0, 0, 7, 0, 9]);
  });

  it("ends with protocol-violation on an unknown message and closes both sides", async () => {
    const { client, ended, proxyBrowserSide, proxyTargetSide, counters } = await connected({ mode: "view" });
    client.send(Buffer.from([3, 0, 0, 0, 0, 0, 0, 10, 0, 10, 99, 0, 0, 0]));
    expect(await ended).toEqual({ reason: "protocol-violation", detail: "unknown client message type 99" });
    expect(proxyBrowserSide.destroyed && proxyTargetSide.destroyed).toBe(true);
    expect(counters.client).toBe(1);
  });

  it("ends with message-too-large on a cut text over the limit", async () => {
    const { client, ended } = await connected({ maxClientMessageBytes: 1024 });
    client.cutText("x".repeat(2000));
    expect(await ended).toEqual({
      reason: "message-too-large",
      detail: "client message type 6 of 2008 bytes",
    });
  });

  it("leaves closing the browser side to closeBrowser when it cuts it off, so its owner can say why", async () => {
    const closed: RfbBridgeEnd[] = [];
    const { client, ended, proxyBrowserSide, proxyTargetSide } = await connected({
      closeBrowser: (end) => closed.push(end),
    });
    client.send(Buffer.from([99]));
    const end = await ended;
    expect(closed).toEqual([end]);
    expect(proxyTargetSide.destroyed).toBe(true);
    expect(proxyBrowserSide.destroyed).toBe(false);
  });

  it("ends a view session with target-violation when its server sends what it cannot frame", async () => {
    const { target, ended } = await connected({ mode: "view" });
    target.write(Buffer.from([0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 21])); // a JPEG rectangle
    expect(await ended).toEqual({
      reason: "target-violation",
      detail: "the screen sent what a view session cannot frame: rectangle encoding 21",
    });
  });

  it("ends with target-closed and lets the browser read what was sent before", async () => {
    const { client, target, ended } = await connected();
    target.end(Buffer.from([2, 2]));
    expect(await ended).toEqual({ reason: "target-closed" });
    expect(await client.readMessage()).toEqual({ type: "bell" });
    expect(await client.readMessage()).toEqual({ type: "bell" });
  });

  it("ends with browser-closed and closes the target", async () => {
    const { client, target, ended } = await connected();
    const targetClosed = once(target, "close");
    client.close();
    expect(await ended).toEqual({ reason: "browser-closed" });
    await targetClosed;
  });

  it("ends with aborted when the signal fires, closing both sides", async () => {
    const controller = new AbortController();
    const { ended, proxyBrowserSide, proxyTargetSide } = await connected({ signal: controller.signal });
    controller.abort();
    expect(await ended).toEqual({ reason: "aborted" });
    expect(proxyBrowserSide.destroyed && proxyTargetSide.destroyed).toBe(true);
  });

  it("ends at once with aborted for a signal that already fired", async () => {
    const { ended } = setup({ signal: AbortSignal.abort() });
    expect(await ended).toEqual({ reason: "aborted" });
  });

  it("stops reading the target while the browser does not read, then delivers everything", async () => {
    const { target, counters, browser, ended } = setup();
    void fakeVncServer(target);
    // A browser that reads only when asked: its reader stops taking data past 64 KiB.
    const reader = await browserHandshake(browser);
    const total = 16 * 1024 * 1024;
    const payload = Buffer.alloc(total, 7);
    let offered = 0;
    const writer = (async () => {
      for (let at = 0; at < total; at += 64 * 1024) {
        offered = at;
        if (!target.write(payload.subarray(at, at + 64 * 1024))) await once(target, "drain");
      }
      offered = total;
    })();
    await sleep(300);
    // Only a few stream buffers' worth went through; the rest waits at the target.
    const serverInitBytes = 24 + "fake desktop".length;
    expect(counters.server - serverInitBytes).toBeLessThan(1024 * 1024);
    expect(offered).toBeLessThan(1024 * 1024);

    let received = 0;
    while (received < total) {
      const chunk = await reader.read(Math.min(1024 * 1024, total - received));
      expect(chunk.every((byte) => byte === 7)).toBe(true);
      received += chunk.length;
    }
    await writer;
    expect(counters.server).toBe(serverInitBytes + total);
    browser.end();
    expect(await ended).toEqual({ reason: "browser-closed" });
  });
});

describe("bridgeRfb taps", () => {
  async function tapped(mode: "view" | "control") {
    const serverData: Buffer[] = [];
    const clientMessages: number[][] = [];
    const sizes: Array<[number, number]> = [];
    const bridge = setup({
      mode,
      // copied: a tap's buffer is the bridge's (a lent chunk in production)
      onServerData: (data) => serverData.push(Buffer.from(data)),
      onClientMessage: (message) => clientMessages.push([...message]),
      onDesktopSize: (width, height) => sizes.push([width, height]),
    });
    const [server, client] = await Promise.all([
      fakeVncServer(bridge.target),
      RfbClient.connect(bridge.browser),
    ]);
    return { ...bridge, server: server.reader, client, serverData, clientMessages, sizes };
  }

  it("show every byte written to the browser from ServerInit on, and each forwarded message whole", async () => {
    const { client, server, target, serverData, clientMessages } = await tapped("control");
    expect(Buffer.concat(serverData).subarray(20).toString("latin1")).toBe(
      `${u32(12).toString("latin1")}fake desktop`,
    );
    // two messages in one write, then one cut across two writes
    client.send(Buffer.from([5, 1, 0, 100, 0, 200, 4, 1, 0, 0, 0, 0, 0, 0x61]));
    client.send(Buffer.from([5, 0, 0]));
    client.send(Buffer.from([7, 0, 9]));
    await server.read(6 + 8 + 6);
    expect(clientMessages).toEqual([
      [5, 1, 0, 100, 0, 200],
      [4, 1, 0, 0, 0, 0, 0, 0x61],
      [5, 0, 0, 7, 0, 9],
    ]);
    target.write(Buffer.from([2, 2]));
    await client.readMessage();
    await client.readMessage();
    expect(Buffer.concat(serverData)).toHaveLength(24 + 12 + 2);
    expect(Buffer.concat(serverData).subarray(-2)).toEqual(Buffer.from([2, 2]));
  });

  it("show a viewer's messages as forwarded: encodings narrowed, input left out, the clipboard withheld", async () => {
    const { client, server, target, serverData, clientMessages } = await tapped("view");
    client.keyEvent(0x61, true);
    client.setEncodings([0, 0xc0a1e5ce | 0, -223]);
    client.requestUpdate({ incremental: true });
    await server.read(4 + 8 + 10);
    expect(clientMessages.map((message) => message[0])).toEqual([2, 3]);
    expect(Buffer.from(clientMessages[0] ?? []).subarray(4)).toEqual(
      Buffer.concat([u32(0), u32(-223 >>> 0)]),
    );
    target.write(Buffer.concat([Buffer.from([3, 0, 0, 0]), rfbText("secret"), Buffer.from([2])]));
    expect(await client.readMessage()).toEqual({ type: "bell" });
    expect(Buffer.concat(serverData).toString("latin1")).not.toContain("secret");
    expect(Buffer.concat(serverData).subarray(-1)).toEqual(Buffer.from([2]));
  });

  it("tell a viewer's owner the desktop's size, from ServerInit and from each resize", async () => {
    const { client, target, sizes } = await tapped("view");
    expect(sizes).toEqual([[640, 480]]);
    // a FramebufferUpdate holding one DesktopSize rectangle: 800x600
    target.write(Buffer.from([0, 0, 0, 1, 0, 0, 0, 0, 3, 32, 2, 88, 0xff, 0xff, 0xff, 0x21]));
    await client.readMessage();
    expect(sizes).toEqual([
      [640, 480],
      [800, 600],
    ]);
  });
});
