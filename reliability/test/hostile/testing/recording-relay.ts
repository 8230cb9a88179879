import { once } from "node:events";
import { connect, createServer, type Socket } from "node:net";

/**
 * A loopback TCP relay in front of a real VNC server that keeps every byte the proxy sends the
 * server: what reached the computer, read at its door rather than from the proxy's own counters.
 */
export interface RecordingRelay {
  port: number;
  /** The bytes each connection carried towards the server, in the order connections were made. */
  connections: Buffer[][];
  close(): Promise<void>;
}

export async function startRecordingRelay(server: { host: string; port: number }): Promise<RecordingRelay> {
  const connections: Buffer[][] = [];
  const open = new Set<Socket>();
  const relay = createServer((fromProxy) => {
    const received: Buffer[] = [];
    connections.push(received);
    const toServer = connect(server.port, server.host);
    for (const socket of [fromProxy, toServer]) {
      open.add(socket);
      socket.once("close", () => open.delete(socket));
      socket.on("error", () => undefined);
    }
    fromProxy.on("data", (chunk: Buffer) => received.push(chunk));
    fromProxy.pipe(toServer);
    toServer.pipe(fromProxy);
    fromProxy.once("close", () => toServer.destroy());
    toServer.once("close", () => fromProxy.destroy());
  });
  relay.listen(0, "127.0.0.1");
  await once(relay, "listening");
  const address = relay.address();
  if (address === null || typeof address === "string") throw new Error("no TCP address");
  return {
    port: address.port,
    connections,
    async close() {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => relay.close(() => resolve()));
    },
  };
}
