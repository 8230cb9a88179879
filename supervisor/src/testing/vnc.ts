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

/**
 * Whether a VNC server accepts the password (RFB 3.8, VNC authentication); null when this machine
 * cannot compute the DES response.
 */
export async function vncAccepts(port: number, password: string): Promise<boolean | null> {
  const socket = connect({ host: "127.0.0.1", port });
  const read = reader(socket);
  try {
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
  } finally {
    socket.destroy();
  }
}
