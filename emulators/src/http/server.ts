import type { Server } from "node:http";
import type { AddressInfo } from "node:net";

/** Starts `server` listening (port 0: an ephemeral one) and gives its URL once it does. */
export async function listenOn(server: Server, host: string, port: number): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return `http://${host}:${(server.address() as AddressInfo).port}`;
}

/** Stops listening and cuts every open connection (streams included). */
export async function shutDown(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  await closed;
}
