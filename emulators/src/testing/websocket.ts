import WebSocket from "ws";

/**
 * The first message a WebSocket at `url` sends (latin1, as the RFB greeting is bytes), opened with
 * `headers`; a refused upgrade rejects with "HTTP <status>".
 */
export function firstMessage(url: string, headers: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers });
    socket.once("message", (data: Buffer) => {
      resolve(data.toString("latin1"));
      socket.close();
    });
    socket.once("unexpected-response", (_request, response) =>
      reject(new Error(`HTTP ${response.statusCode}`)),
    );
    socket.once("error", reject);
  });
}
