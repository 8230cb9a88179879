import net from "node:net";

/**
 * A screen's TCP stream read into buffers that are used again once the bytes read into them have
 * been relayed. Node otherwise gives every read a new 64 KiB buffer: at screen rates that is
 * hundreds of MB/s of short-lived external memory, and V8 answers such pressure with collections
 * that took a third of the proxy's CPU (perf, bench/proxy). The socket still emits 'data', but a
 * chunk's memory is lent: whoever holds it past the 'data' handler must not `recycle` it; whoever
 * recycles it must be done with it (the bridge recycles a chunk once its bytes were written on).
 * A chunk never recycled is simply left to the garbage collector.
 */
export interface RecycledReadSocket {
  socket: net.Socket;
  /** Hands a chunk this socket emitted back for a later read. */
  recycle(chunk: Buffer): void;
}

/** A full read's size: Node's own (libuv's suggested size). */
export const READ_BYTES = 64 * 1024;
/**
 * While a socket is idle its pending read holds a small buffer, so an open socket costs little;
 * a read that fills it means a burst, and reads get whole READ_BYTES ones until one comes back short
 * of the small size again.
 */
export const IDLE_READ_BYTES = 2 * 1024;
/** Recycled READ_BYTES buffers kept, shared by every socket: enough for a few busy sockets. */
const SPARES_KEPT = 32;
const spares: Buffer[] = [];
/** Buffers out in a read or a chunk, so that one recycled twice is not handed to two reads. */
const lent = new WeakSet<ArrayBufferLike>();

function bigBuffer(): Buffer {
  const buffer = spares.pop() ?? Buffer.allocUnsafeSlow(READ_BYTES);
  lent.add(buffer.buffer);
  return buffer;
}

export function connectRecycledReads(options: { host: string; port: number }): RecycledReadSocket {
  let lastRead = 0;
  const nextBuffer = () =>
    lastRead >= IDLE_READ_BYTES ? bigBuffer() : Buffer.allocUnsafeSlow(IDLE_READ_BYTES);
  const socket = net.connect({
    ...options,
    noDelay: true,
    onread: {
      buffer: nextBuffer,
      callback: (bytes, buffer) => {
        lastRead = bytes;
        socket.emit("data", Buffer.from(buffer.buffer, buffer.byteOffset, bytes));
        // Pausing is the stream's own business (socket.pause() stops these reads too).
        return true;
      },
    },
  });
  return { socket, recycle };
}

function recycle(chunk: Buffer): void {
  if (!lent.delete(chunk.buffer) || spares.length >= SPARES_KEPT) return;
  spares.push(Buffer.from(chunk.buffer, 0, READ_BYTES));
}
