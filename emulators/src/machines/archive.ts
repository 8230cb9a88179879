/**
 * Small files carried into and out of a container through the engine's archive API, which works
 * whatever the container's state: a stopped container's disk can be read and written without
 * booting it. Only what one small file needs of the tar format is here (ustar headers).
 */

const BLOCK = 512;

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, "0")}\0`;
}

function header(name: string, size: number, mode: number, type: "0" | "5"): Buffer {
  if (Buffer.byteLength(name) > 100) throw new Error(`tar entry name too long: ${name}`);
  const block = Buffer.alloc(BLOCK);
  block.write(name, 0, 100, "utf8");
  block.write(octal(mode, 8), 100, "latin1");
  block.write(octal(0, 8), 108, "latin1"); // uid: root
  block.write(octal(0, 8), 116, "latin1"); // gid: root
  block.write(octal(size, 12), 124, "latin1");
  block.write(octal(Math.floor(Date.now() / 1000), 12), 136, "latin1");
  block.write(" ".repeat(8), 148, "latin1"); // the checksum counts its own field as spaces
  block.write(type, 156, "latin1");
  block.write("ustar\0" + "00", 257, "latin1");
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "latin1");
  return block;
}

/**
 * A tar holding `path` (absolute) with `data`, owned by root with `mode`, and its folder (mode
 * 0700), to be extracted at `/`.
 */
export function tarOfFile(path: string, data: Buffer, mode: number): Buffer {
  const name = path.replace(/^\/+/, "");
  const folder = name.includes("/") ? `${name.slice(0, name.lastIndexOf("/"))}/` : null;
  const padding = Buffer.alloc((BLOCK - (data.length % BLOCK)) % BLOCK);
  return Buffer.concat([
    ...(folder ? [header(folder, 0, 0o700, "5")] : []),
    header(name, data.length, mode, "0"),
    data,
    padding,
    Buffer.alloc(2 * BLOCK),
  ]);
}

/** The contents of the first regular file in a tar; null when there is none. */
export function firstFileOf(tar: Buffer): Buffer | null {
  for (let at = 0; at + BLOCK <= tar.length; ) {
    const block = tar.subarray(at, at + BLOCK);
    if (block.every((byte) => byte === 0)) return null;
    const size = Number.parseInt(
      block.subarray(124, 136).toString("latin1").replace(/\0.*$/s, "").trim() || "0",
      8,
    );
    const type = String.fromCharCode(block[156] ?? 0);
    const start = at + BLOCK;
    if (type === "0" || type === "\0") return Buffer.from(tar.subarray(start, start + size));
    // PAX and GNU long-name headers, folders: skipped with their data
    at = start + Math.ceil(size / BLOCK) * BLOCK;
  }
  return null;
}
