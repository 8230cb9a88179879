import { once } from "node:events";
import { describe, expect, it } from "vitest";
import type { RfbBridgeEnd } from "../rfb/bridge.ts";
import type { ByteReader } from "../rfb/byte-reader.ts";
import { viewMayNegotiate } from "../rfb/server-messages.ts";
import { FAKE_VNC_PASSWORD, fakeVncServer } from "../rfb/testing/fake-vnc-server.ts";
import { memoryPair } from "../rfb/testing/pairs.ts";
import { NOVNC_PIXEL_FORMAT, VIEWER_ENCODINGS, viewScreen } from "./screen-viewer.ts";

async function viewing() {
  const [proxyTargetSide, target] = memoryPair();
  const serverData: Buffer[] = [];
  const clientMessages: Buffer[] = [];
  const closed: RfbBridgeEnd[] = [];
  const viewer = viewScreen({
    target: proxyTargetSide,
    password: FAKE_VNC_PASSWORD,
    maxClientMessageBytes: 64 * 1024,
    onServerData: (data) => serverData.push(Buffer.from(data)),
    onClientMessage: (message) => clientMessages.push(Buffer.from(message)),
    closeBrowser: (end) => closed.push(end),
  });
  const server = await fakeVncServer(target);
  return { viewer, target, server, serverData, clientMessages, closed };
}

/** The next update request the screen gets. */
async function updateRequest(reader: ByteReader) {
  const message = await reader.read(10);
  expect(message.readUInt8(0)).toBe(3);
  return {
    incremental: message.readUInt8(1) === 1,
    area: [
      message.readUInt16BE(2),
      message.readUInt16BE(4),
      message.readUInt16BE(6),
      message.readUInt16BE(8),
    ],
  };
}

describe("the proxy viewing a screen for a recording", () => {
  it("asks as noVNC does: shared, its pixel format, framed encodings, a full update, then what changed", async () => {
    const { server, serverData, clientMessages } = await viewing();
    expect(server.clientInit).toBe(1);
    const setPixelFormat = await server.reader.read(20);
    expect(setPixelFormat.subarray(0, 4)).toEqual(Buffer.from([0, 0, 0, 0]));
    expect(setPixelFormat.subarray(4)).toEqual(NOVNC_PIXEL_FORMAT);
    const header = await server.reader.read(4);
    expect(header.readUInt8(0)).toBe(2);
    const encodings = await server.reader.read(4 * header.readUInt16BE(2));
    const asked = Array.from({ length: encodings.length / 4 }, (_, i) => encodings.readInt32BE(4 * i));
    expect(asked).toEqual(VIEWER_ENCODINGS);
    expect(asked.every(viewMayNegotiate)).toBe(true);
    expect(await updateRequest(server.reader)).toEqual({ incremental: false, area: [0, 0, 640, 480] });
    expect(await updateRequest(server.reader)).toEqual({ incremental: true, area: [0, 0, 640, 480] });

    // recorded: the screen's stream from ServerInit on, and the viewer's own messages
    expect(serverData[0]?.subarray(0, 4)).toEqual(Buffer.from([2, 128, 1, 224]));
    expect(serverData[0]?.subarray(24).toString("latin1")).toBe("fake desktop");
    expect(clientMessages.slice(0, 4).map((message) => message.readUInt8(0))).toEqual([0, 2, 3, 3]);
    expect(clientMessages[0]).toEqual(setPixelFormat);
  });

  it("follows the screen's size and never sends input", async () => {
    const { target, server, clientMessages } = await viewing();
    await server.reader.read(20 + 4 + 4 * VIEWER_ENCODINGS.length);
    await updateRequest(server.reader);
    // a FramebufferUpdate with one DesktopSize rectangle: 800x600
    target.write(Buffer.from([0, 0, 0, 1, 0, 0, 0, 0, 3, 32, 2, 88, 0xff, 0xff, 0xff, 0x21]));
    let request = await updateRequest(server.reader);
    for (let i = 0; i < 3 && request.area[2] !== 800; i++) request = await updateRequest(server.reader);
    expect(request).toEqual({ incremental: true, area: [0, 0, 800, 600] });
    expect(new Set(clientMessages.map((message) => message.readUInt8(0)))).toEqual(new Set([0, 2, 3]));
  });

  it("ends as a browser leaving when stopped, closing the screen", async () => {
    const { viewer, target, closed } = await viewing();
    const targetClosed = once(target, "close");
    viewer.stop();
    expect(await viewer.ended).toEqual({ reason: "browser-closed" });
    await targetClosed;
    expect(closed).toEqual([]);
  });

  it("ends when the screen goes, telling its owner", async () => {
    const { viewer, target, closed } = await viewing();
    target.end();
    expect(await viewer.ended).toEqual({ reason: "target-closed" });
    expect(closed).toEqual([{ reason: "target-closed" }]);
  });
});
