/**
 * `getSessionCommandLogs(…, onStdout, onStderr)`: a WebSocket on which the command's labelled log
 * is sent as binary frames as it is written, closed once the command has exited and all of it was
 * sent, as Daytona's daemon does.
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { WebSocket, WebSocketServer } from "ws";
import { readFile } from "./reading.ts";
import type { Sandbox } from "./sandbox.ts";
import type { SessionCommand } from "./sessions.ts";

/** Frames stay small: the SDK's demultiplexer copies each into an array by spreading it. */
const FRAME_BYTES = 16 * 1024;

export function followCommandLogs(
  sockets: WebSocketServer,
  sandbox: Sandbox,
  command: SessionCommand,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): void {
  sockets.handleUpgrade(req, socket, head, (ws) => {
    const gone = new AbortController();
    const release = sandbox.hold({ abort: () => ws.terminate() });
    ws.once("close", () => gone.abort(new Error("the client went away")));
    ws.on("error", () => undefined);
    const log = readFile(sandbox, `${command.dir}/output.log`, {
      follow: `${command.dir}/exit_code`,
      signal: gone.signal,
    });
    (async () => {
      for await (const chunk of log) {
        for (let at = 0; at < chunk.length; at += FRAME_BYTES) {
          await send(ws, chunk.subarray(at, at + FRAME_BYTES));
        }
      }
      ws.close(1000);
    })()
      .catch(() => ws.terminate())
      .finally(release);
  });
}

/** Sends a frame; resolves once it is written out, so a slow client slows the reading. */
function send(ws: WebSocket, data: Buffer): Promise<void> {
  return new Promise((resolve, reject) =>
    ws.send(data, { binary: true }, (error) => (error ? reject(error) : resolve())),
  );
}
