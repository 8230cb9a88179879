/** The width and height a PNG's header states; throws when the bytes are not a PNG. */
export function pngSize(png: Uint8Array): { width: number; height: number } {
  const signature = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
  if (!signature.every((byte, i) => png[i] === byte)) throw new Error("not a PNG");
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength);
  // the first chunk is IHDR: its data starts at byte 16 with the width, then the height
  if (new TextDecoder().decode(png.subarray(12, 16)) !== "IHDR") throw new Error("PNG without IHDR first");
  return { width: view.getUint32(16), height: view.getUint32(20) };
}
