import { spawnSync } from "node:child_process";
import { connect, type Socket } from "node:net";

/** Reads exact byte counts from a socket. */
function reader(socket: Socket) {
  let buffered = Buffer.alloc(0);
  let waiting: (() => void) | null = null;
  let failed: Error | null = null;
  socket.on("data", (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    waiting?.();
  });
  const fail = (error: Error) => {
    failed = error;
    waiting?.();
  };
  socket.on("error", fail);
  socket.on("close", () => fail(new Error("closed")));
  return async (count: number): Promise<Buffer> => {
    while (buffered.length < count) {
      if (failed) throw failed;
      await new Promise<void>((resolve) => {
        waiting = resolve;
      });
      waiting = null;
    }
    const out = buffered.subarray(0, count);
    buffered = buffered.subarray(count);
    return out;
  };
}

/** VNC's DES key: the password's first 8 bytes, each with its bits reversed. */
function vncKey(password: string): Buffer {
  const key = Buffer.alloc(8);
  Buffer.from(password, "latin1").copy(key, 0, 0, 8);
  return Buffer.from(
    key.map((byte) => Number.parseInt(byte.toString(2).padStart(8, "0").split("").reverse().join(""), 2)),
  );
}

/** DES-ECB through the openssl CLI (Node's OpenSSL 3 build leaves DES out); null when unavailable. */
function des(key: Buffer, data: Buffer): Buffer | null {
  const result = spawnSync(
    "openssl",
    ["enc", "-des-ecb", "-K", key.toString("hex"), "-nopad", "-provider", "legacy", "-provider", "default"],
    { input: data },
  );
  return result.status === 0 && result.stdout.length === data.length ? result.stdout : null;
}

/** RFB 3.8 up to the security result; null when this machine cannot compute the DES response. */
async function authenticate(
  socket: Socket,
  read: (count: number) => Promise<Buffer>,
  password: string,
): Promise<boolean | null> {
  const version = (await read(12)).toString("latin1");
  if (!version.startsWith("RFB ")) throw new Error(`not a VNC server: ${version}`);
  socket.write("RFB 003.008\n");
  const count = (await read(1))[0] ?? 0;
  if (count === 0) throw new Error("the server refused the connection");
  const types = [...(await read(count))];
  if (!types.includes(2)) throw new Error(`no VNC authentication offered (${types.join(",")})`);
  socket.write(Buffer.from([2]));
  const challenge = await read(16);
  const response = des(vncKey(password), challenge);
  if (!response) return null;
  socket.write(response);
  return (await read(4)).readUInt32BE(0) === 0;
}

/**
 * Whether a VNC server accepts the password (RFB 3.8, VNC authentication); null when this machine
 * cannot compute the DES response.
 */
export async function vncAccepts(
  port: number,
  password: string,
  host = "127.0.0.1",
): Promise<boolean | null> {
  const socket = connect({ host, port });
  const read = reader(socket);
  try {
    return await authenticate(socket, read, password);
  } finally {
    socket.destroy();
  }
}

/**
 * Logs in and sends one PointerEvent (no button pressed) to (x, y), as a VNC viewer moving the
 * mouse would; a view-only server ignores it. False when the password is refused, null when this
 * machine cannot compute the DES response.
 */
export async function vncMovePointer(
  port: number,
  password: string,
  x: number,
  y: number,
  host = "127.0.0.1",
): Promise<boolean | null> {
  const socket = connect({ host, port });
  const read = reader(socket);
  try {
    const accepted = await authenticate(socket, read, password);
    if (!accepted) return accepted;
    socket.write(Buffer.from([1])); // ClientInit: share the desktop
    const serverInit = await read(24);
    await read(serverInit.readUInt32BE(20)); // the desktop's name
    const event = Buffer.alloc(6);
    event[0] = 5; // PointerEvent
    event.writeUInt16BE(x, 2);
    event.writeUInt16BE(y, 4);
    socket.write(event);
    // give the server time to read the event before the connection goes
    await new Promise((resolve) => setTimeout(resolve, 300));
    return true;
  } finally {
    socket.destroy();
  }
}

/** An RFB connection left open after the server's version banner, to see whether it stays up. */
export interface HeldVncConnection {
  /** The server's 12-byte version line, e.g. "RFB 003.008\n". */
  readonly banner: string;
  /** Whether the server (or anything) closed the connection. */
  isClosed(): boolean;
  /** Resolves once the connection closes; false when it is still open after `withinMs`. */
  closesWithin(withinMs: number): Promise<boolean>;
  /** Continues the handshake and returns the security types offered: proof that it is still served. */
  securityTypes(): Promise<number[]>;
  close(): void;
}

/** Connects and reads the banner; rejects when nothing answers RFB there (refused, or closed). */
export async function holdVncConnection(port: number, host = "127.0.0.1"): Promise<HeldVncConnection> {
  const socket = connect({ host, port });
  let closed = false;
  const whenClosed = new Promise<void>((resolve) => {
    socket.once("close", () => {
      closed = true;
      resolve();
    });
  });
  const read = reader(socket);
  let banner: string;
  try {
    banner = (await withTimeout(read(12), 10_000, "no RFB banner")).toString("latin1");
    if (!banner.startsWith("RFB ")) throw new Error(`not a VNC server: ${JSON.stringify(banner)}`);
  } catch (error) {
    socket.destroy();
    throw error;
  }
  return {
    banner,
    isClosed: () => closed,
    closesWithin: (withinMs) =>
      withTimeout(
        whenClosed.then(() => true),
        withinMs,
        "",
      ).catch(() => false),
    async securityTypes() {
      socket.write("RFB 003.008\n");
      const count = (await withTimeout(read(1), 10_000, "no security types"))[0] ?? 0;
      return [...(await withTimeout(read(count), 10_000, "no security types"))];
    },
    close: () => socket.destroy(),
  };
}

/** Whether something at the port answers with an RFB banner (false when refused or closed). */
export async function vncAnswers(port: number, host = "127.0.0.1"): Promise<boolean> {
  try {
    (await holdVncConnection(port, host)).close();
    return true;
  } catch {
    return false;
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message || `timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** A logged-in RFB connection that records the clipboard texts (ServerCutText) the server sends it. */
export interface VncClipboardWatch {
  /** Every ServerCutText received so far, in order. */
  readonly texts: string[];
  close(): void;
}

/**
 * Logs in, shares the desktop and then only listens: without a FramebufferUpdateRequest a server
 * sends no pixels, so what arrives is ServerCutText (and Bell). Null when this machine cannot
 * compute the DES response; rejects when the password is refused.
 */
export async function watchVncClipboard(
  port: number,
  password: string,
  host = "127.0.0.1",
): Promise<VncClipboardWatch | null> {
  const socket = connect({ host, port });
  const read = reader(socket);
  const texts: string[] = [];
  try {
    const accepted = await authenticate(socket, read, password);
    if (accepted === null) {
      socket.destroy();
      return null;
    }
    if (!accepted) throw new Error("the password was refused");
    socket.write(Buffer.from([1])); // ClientInit: share the desktop
    const serverInit = await read(24);
    await read(serverInit.readUInt32BE(20)); // the desktop's name
  } catch (error) {
    socket.destroy();
    throw error;
  }
  const listen = async () => {
    for (;;) {
      const type = (await read(1))[0];
      if (type === 2) continue; // Bell
      if (type !== 3) throw new Error(`unexpected server message type ${type}`);
      const length = (await read(7)).readUInt32BE(3);
      texts.push((await read(length)).toString("latin1"));
    }
  };
  listen().catch(() => socket.destroy());
  return { texts, close: () => socket.destroy() };
}
