import type { AddressInfo } from "node:net";
import net from "node:net";
import { WebSocket } from "ws";
import type { ScreenTarget } from "../src/contract/index.ts";

export type VncTarget = Extract<ScreenTarget, { kind: "vnc" }>;

/**
 * Lets the suites speak RFB over TCP to any screen target. A `vnc` target is used as it is; a
 * `vendor-websocket` one gets a loopback TCP port whose every connection opens the vendor's
 * WebSocket (with its headers) and carries the bytes both ways, as the screen proxy does. A
 * refused WebSocket closes the TCP connection at once, as a server that is not there would.
 */
export class ScreenRelays {
  private readonly servers = new Set<net.Server>();
  private readonly sockets = new Set<net.Socket>();

  async reach(target: ScreenTarget): Promise<VncTarget> {
    if (target.kind === "vnc") return target;
    const { url, headers } = target;
    const server = net.createServer((socket) => {
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
      const vendor = new WebSocket(url, { headers: headers ?? {}, perMessageDeflate: false });
      const pending: Buffer[] = [];
      socket.on("data", (data) => {
        if (vendor.readyState === WebSocket.OPEN) vendor.send(data);
        else pending.push(data);
      });
      vendor.on("open", () => {
        for (const data of pending.splice(0)) vendor.send(data);
      });
      vendor.on("message", (data: Buffer) => socket.write(data));
      vendor.on("close", () => socket.destroy());
      vendor.on("error", () => socket.destroy());
      socket.on("close", () => vendor.terminate());
      socket.on("error", () => vendor.terminate());
    });
    this.servers.add(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    return { kind: "vnc", host: "127.0.0.1", port, password: target.password ?? "" };
  }

  async closeAll(): Promise<void> {
    const servers = [...this.servers];
    this.servers.clear();
    for (const socket of this.sockets) socket.destroy();
    await Promise.all(
      servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
          }),
      ),
    );
  }
}
