/** Connected stream pairs for tests: what one end writes, the other reads. */
import { once } from "node:events";
import { connect, createServer, type Socket } from "node:net";
import { Duplex } from "node:stream";

/** Two ends of a real loopback TCP connection. */
export async function tcpPair(): Promise<[Socket, Socket]> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no TCP address");
  const accepted = once(server, "connection") as Promise<[Socket]>;
  const client = connect(address.port, "127.0.0.1");
  const [[serverSide]] = await Promise.all([accepted, once(client, "connect")]);
  server.close();
  return [client, serverSide];
}

/**
 * Two in-memory ends with the backpressure of real streams: a write completes only once the peer
 * has room for it, so at most about two high-water marks are ever buffered in between.
 */
export function memoryPair(highWaterMark = 16 * 1024): [Duplex, Duplex] {
  const a = new MemoryEnd(highWaterMark);
  const b = new MemoryEnd(highWaterMark);
  a.peer = b;
  b.peer = a;
  return [a, b];
}

class MemoryEnd extends Duplex {
  peer: MemoryEnd | undefined;
  #resumeWriter: (() => void) | undefined;

  constructor(highWaterMark: number) {
    super({ allowHalfOpen: false, highWaterMark });
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    const peer = this.peer;
    if (!peer || peer.destroyed) callback(new Error("peer closed"));
    else if (peer.push(chunk)) callback();
    else peer.#resumeWriter = callback;
  }

  override _read(): void {
    const resume = this.#resumeWriter;
    this.#resumeWriter = undefined;
    resume?.();
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.peer?.push(null);
    callback();
  }

  /** Like a connection reset: the peer goes too. */
  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (this.peer && !this.peer.destroyed) this.peer.destroy();
    callback(error);
  }
}
