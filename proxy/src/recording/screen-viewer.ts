/**
 * The proxy as a screen's viewer, for api's session recorder (a `record` socket): nobody watches,
 * yet the screen's stream must flow to be recorded. The bridge runs in `view` mode as for any
 * viewer, with this in-process client as its "browser", so the target's handshake, the shared
 * ClientInit, the server stream's framing (no clipboard) and the recording taps are the bridge's
 * own. The client asks for what noVNC asks for, so that noVNC replays the stream as it was sent.
 */
import { duplexPair } from "node:stream";
import { bridgeRfb, type RfbBridgeEnd, type RfbBridgeOptions } from "../rfb/bridge.ts";
import { ClientMessageType } from "../rfb/client-messages.ts";
import { versionMessage } from "../rfb/handshake.ts";
import { Encoding } from "../rfb/server-messages.ts";

/** How often the viewer asks for what changed: as often as a screen is worth recording. */
const UPDATE_INTERVAL_MS = 100;

const SECURITY_NONE = 1;
const SHARED = 1;

/** noVNC's pixel format: 32 bits per pixel, depth 24, little-endian, true colour, 8 bits per channel, RGB from bit 0. */
export const NOVNC_PIXEL_FORMAT = Buffer.from([32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 0, 8, 16, 0, 0, 0]);

/**
 * In noVNC's order of preference. No JPEG quality level, so Tight sends no JPEG (a replay decodes
 * without an image decoder), and no cursor shape, so the server draws the pointer into the frames.
 */
export const VIEWER_ENCODINGS: readonly number[] = [
  Encoding.CopyRect,
  Encoding.Tight,
  Encoding.ZRLE,
  Encoding.Hextile,
  Encoding.RRE,
  Encoding.Zlib,
  Encoding.Raw,
  -254, // compression level 2, noVNC's default
  Encoding.DesktopSize,
  Encoding.LastRect,
  Encoding.ExtendedDesktopSize,
  Encoding.DesktopName,
];

export type ScreenViewerOptions = Omit<RfbBridgeOptions, "browser" | "mode" | "onDesktopSize">;

export interface ScreenViewer {
  /** How the bridge ended; `browser-closed` means stop() ended it. */
  readonly ended: Promise<RfbBridgeEnd>;
  /** Stops viewing: the bridge ends as if its browser left. */
  stop(): void;
}

export function viewScreen(options: ScreenViewerOptions): ScreenViewer {
  const [viewer, bridgeSide] = duplexPair();
  // What the bridge sends the viewer is seen through its taps; the viewer's copy is dropped.
  viewer.resume();
  // RFB 3.8, security None, shared: the bridge's side of the handshake reads these in turn.
  viewer.write(Buffer.concat([versionMessage(8), Buffer.from([SECURITY_NONE, SHARED])]));
  let size: { width: number; height: number } | undefined;
  let timer: NodeJS.Timeout | undefined;
  // Nothing is written once the viewer has stopped or the bridge has ended.
  const send = (message: Buffer) => {
    if (viewer.writable) viewer.write(message);
  };
  const updateRequest = (incremental: boolean) => {
    const message = Buffer.alloc(10);
    message.writeUInt8(ClientMessageType.FramebufferUpdateRequest, 0);
    message.writeUInt8(incremental ? 1 : 0, 1);
    message.writeUInt16BE(size?.width ?? 0, 6);
    message.writeUInt16BE(size?.height ?? 0, 8);
    return message;
  };
  const start = () => {
    if (!viewer.writable) return;
    send(Buffer.concat([setPixelFormat(), setEncodings(VIEWER_ENCODINGS), updateRequest(false)]));
    timer = setInterval(() => send(updateRequest(true)), UPDATE_INTERVAL_MS);
  };
  const ended = bridgeRfb({
    ...options,
    browser: bridgeSide,
    mode: "view",
    onDesktopSize: (width, height) => {
      // Told from inside the bridge's handling of the server's bytes: the first requests go out after it.
      if (!size) queueMicrotask(start);
      size = { width, height };
    },
  }).then((end) => {
    clearInterval(timer);
    viewer.destroy();
    bridgeSide.destroy();
    return end;
  });
  // Ending the viewer's side is seen by the bridge as its browser leaving.
  return {
    ended,
    stop: () => {
      if (viewer.writable) viewer.end();
    },
  };
}

function setPixelFormat(): Buffer {
  return Buffer.concat([Buffer.from([ClientMessageType.SetPixelFormat, 0, 0, 0]), NOVNC_PIXEL_FORMAT]);
}

function setEncodings(encodings: readonly number[]): Buffer {
  const message = Buffer.alloc(4 + 4 * encodings.length);
  message.writeUInt8(ClientMessageType.SetEncodings, 0);
  message.writeUInt16BE(encodings.length, 2);
  encodings.forEach((encoding, i) => {
    message.writeInt32BE(encoding, 4 + 4 * i);
  });
  return message;
}
