import type { IncomingMessage } from "node:http";
import { Duplex } from "node:stream";
import { SCREEN_PROTOCOL, SCREEN_STATUS_PROTOCOL } from "@cubicle/proxy/capability";
import { RfbClient } from "@cubicle/proxy/testing";
import { createWebSocketStream, WebSocket } from "ws";

/** Everything the browser side of a screen socket received, for asserting nothing leaked. */
export interface Captured {
  status: number | undefined;
  headers: string[];
  frames: Buffer[];
}

export interface OpenedScreen {
  ws: WebSocket;
  rfb: RfbClient;
  captured: Captured;
  /** Resolves with the close code when the proxy closes the socket. */
  closed: Promise<number>;
  /** The close code with its reason (1006 when the socket was cut without a close frame). */
  closedWith: Promise<{ code: number; reason: string }>;
  /** The proxy's status messages (text frames), when the socket asked for them. */
  statuses: unknown[];
}

function capture(ws: WebSocket): Captured {
  const captured: Captured = { status: undefined, headers: [], frames: [] };
  const record = (response: IncomingMessage) => {
    captured.status = response.statusCode;
    captured.headers.push(...response.rawHeaders);
  };
  ws.once("upgrade", record);
  ws.once("unexpected-response", (_request, response) => {
    record(response);
    response.on("data", (chunk: Buffer) => captured.frames.push(chunk));
  });
  ws.on("message", (data: Buffer) => captured.frames.push(Buffer.from(data)));
  return captured;
}

/** Opens a screen socket as a browser would (the token offered as a subprotocol) and speaks RFB on it. */
export async function openScreenSocket(
  proxyUrl: string,
  token: string,
  options: { origin?: string; status?: boolean } = {},
): Promise<OpenedScreen> {
  const protocol = options.status ? SCREEN_STATUS_PROTOCOL : SCREEN_PROTOCOL;
  const ws = new WebSocket(`${proxyUrl.replace(/^http/, "ws")}/screen`, [protocol, token], {
    ...(options.origin ? { origin: options.origin } : {}),
    perMessageDeflate: false,
  });
  const captured = capture(ws);
  // listening from the start: the first status may come in the same read as the upgrade's answer
  const statuses: unknown[] = [];
  const stream = options.status
    ? rfbFrames(ws, (text) => statuses.push(JSON.parse(text)))
    : createWebSocketStream(ws);
  const closedWith = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once("close", (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  const closed = closedWith.then(({ code }) => code);
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
    ws.once("unexpected-response", () => reject(new Error(`refused with ${captured.status}`)));
  });
  const rfb = await RfbClient.connect(stream);
  return { ws, rfb, captured, closed, closedWith, statuses };
}

/** The socket's binary frames as a stream (RFB), its text frames (the proxy's status) to `onText`. */
function rfbFrames(ws: WebSocket, onText: (text: string) => void): Duplex {
  const stream = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, done) {
      ws.send(chunk, { binary: true }, done);
    },
    final(done) {
      ws.close();
      done();
    },
  });
  ws.on("message", (data: Buffer, isBinary) => {
    if (isBinary) stream.push(data);
    else onText(data.toString());
  });
  ws.once("close", () => stream.push(null));
  return stream;
}

/** The HTTP status a refused socket got; the proxy answers every refusal the same way. */
export async function refusedStatus(proxyUrl: string, protocols: string[], origin?: string): Promise<number> {
  const ws = new WebSocket(`${proxyUrl.replace(/^http/, "ws")}/screen`, protocols, {
    ...(origin ? { origin } : {}),
  });
  return new Promise((resolve, reject) => {
    ws.once("open", () => {
      ws.terminate();
      reject(new Error("the proxy opened a socket it should have refused"));
    });
    ws.once("unexpected-response", (_request, response) => {
      resolve(response.statusCode ?? 0);
      ws.terminate();
    });
    ws.once("error", () => undefined);
  });
}
