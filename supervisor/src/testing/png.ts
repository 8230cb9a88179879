import { inflateSync } from "node:zlib";

/** Decodes an 8-bit, non-interlaced PNG into its rows of raw samples (enough to compare pixels). */
export function pngRows(png: Uint8Array): {
  width: number;
  height: number;
  bytesPerPixel: number;
  rows: Buffer[];
} {
  const data = Buffer.from(png);
  const width = data.readUInt32BE(16);
  const height = data.readUInt32BE(20);
  const depth = data[24];
  const colour = data[25];
  if (depth !== 8 || data[28] !== 0)
    throw new Error(`unsupported PNG (depth ${depth}, interlace ${data[28]})`);
  const channels: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };
  const bytesPerPixel = channels[colour ?? -1];
  if (!bytesPerPixel) throw new Error(`unsupported PNG colour type ${colour}`);
  const idat: Buffer[] = [];
  for (let offset = 8; offset < data.length; ) {
    const length = data.readUInt32BE(offset);
    const type = data.toString("latin1", offset + 4, offset + 8);
    if (type === "IDAT") idat.push(data.subarray(offset + 8, offset + 8 + length));
    offset += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * bytesPerPixel;
  const rows: Buffer[] = [];
  let previous = Buffer.alloc(stride);
  for (let y = 0; y < height; y++) {
    const start = y * (stride + 1);
    const filter = raw[start];
    const row = Buffer.from(raw.subarray(start + 1, start + 1 + stride));
    for (let x = 0; x < stride; x++) {
      const left = x >= bytesPerPixel ? (row[x - bytesPerPixel] ?? 0) : 0;
      const up = previous[x] ?? 0;
      const upLeft = x >= bytesPerPixel ? (previous[x - bytesPerPixel] ?? 0) : 0;
      let predictor = 0;
      if (filter === 1) predictor = left;
      else if (filter === 2) predictor = up;
      else if (filter === 3) predictor = (left + up) >> 1;
      else if (filter === 4) {
        const p = left + up - upLeft;
        const [pa, pb, pc] = [Math.abs(p - left), Math.abs(p - up), Math.abs(p - upLeft)];
        predictor = pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft;
      }
      row[x] = ((row[x] ?? 0) + predictor) & 0xff;
    }
    rows.push(row);
    previous = row;
  }
  return { width, height, bytesPerPixel, rows };
}

/** How many different pixel values the image holds, counting up to `limit`. */
export function distinctPixels(png: Uint8Array, limit = 64): number {
  const { rows, bytesPerPixel } = pngRows(png);
  const seen = new Set<string>();
  for (const row of rows) {
    for (let x = 0; x < row.length; x += bytesPerPixel) {
      seen.add(row.subarray(x, x + bytesPerPixel).toString("hex"));
      if (seen.size >= limit) return seen.size;
    }
  }
  return seen.size;
}
