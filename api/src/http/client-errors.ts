import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { HttpProblem, problemFields } from "./problem.ts";

/**
 * Requests Node's HTTP parser refuses before the app sees them (headers past its size limit,
 * conflicting Content-Length, bytes that are not HTTP) are answered as problem JSON too: Node's
 * own answer is a bare status line with no body.
 */
export function answerClientErrors(server: {
  on(event: "clientError", listener: (error: NodeJS.ErrnoException, socket: Duplex) => void): unknown;
}): void {
  server.on("clientError", (error, socket) => {
    // As Node's own handler: nobody is listening any more, or a response already began here.
    const current = (socket as Duplex & { _httpMessage?: { headersSent: boolean } | null })._httpMessage;
    if (error.code === "ECONNRESET" || !socket.writable || current?.headersSent) {
      socket.destroy();
      return;
    }
    const problem =
      error.code === "HPE_HEADER_OVERFLOW"
        ? new HttpProblem(431, "HEADERS_TOO_LARGE", "The request's headers are too large.")
        : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
          ? new HttpProblem(408, "REQUEST_TIMEOUT", "The request did not arrive in time.")
          : new HttpProblem(400, "MALFORMED_HTTP", "The request is not well-formed HTTP.");
    const body = JSON.stringify(problemFields(problem));
    socket.end(
      `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}\r\n` +
        "Content-Type: application/problem+json\r\n" +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        "Connection: close\r\n\r\n" +
        body,
    );
  });
}
