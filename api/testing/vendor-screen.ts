import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import net from "node:net";
import { WebSocketServer } from "ws";

export interface VendorScreen {
  /** The URL a provider would hand the proxy: the secret rides in its query, as Box's page URL does. */
  url: string;
  secret: string;
  /** Upgrade attempts refused for a missing or wrong secret. */
  refused: number;
  close(): Promise<void>;
}

/**
 * Stands in for a vendor's authenticated screen WebSocket: it answers only with the secret query
 * parameter and then carries RFB to a real VNC server, so the proxy's vendor path runs for real.
 */
export async function startVendorScreen(
  vnc: { host: string; port: number },
  secret: string,
): Promise<VendorScreen> {
  const server = createServer((_request, response) => response.writeHead(404).end());
  const wss = new WebSocketServer({ noServer: true });
  const screen: VendorScreen = { url: "", secret, refused: 0, close: async () => undefined };
  server.on("upgrade", (request, socket, head) => {
    const given = new URL(request.url ?? "/", "http://vendor").searchParams.get("secret");
    if (given !== secret) {
      screen.refused++;
      socket.end("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      const tcp = net.connect(vnc);
      ws.on("message", (data: Buffer) => tcp.write(data));
      tcp.on("data", (data) => ws.send(data));
      ws.on("close", () => tcp.destroy());
      tcp.on("close", () => ws.close());
      tcp.on("error", () => ws.terminate());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  screen.url = `ws://127.0.0.1:${port}/desktop/websockify?secret=${encodeURIComponent(secret)}`;
  screen.close = async () => {
    for (const client of wss.clients) client.terminate();
    wss.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return screen;
}
