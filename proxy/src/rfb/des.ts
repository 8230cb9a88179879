/**
 * DES encryption of one 64-bit block (FIPS 46-3), the cipher VNC Authentication is built on.
 *
 * Node 20 ships OpenSSL 3, whose DES lives in the "legacy" provider that is usually not loaded, so the
 * proxy carries its own. Only two blocks are encrypted per connection, so this favours a transcription
 * that can be checked against the standard table by table over speed: blocks are arrays of bits, bit 0
 * being the most significant bit of the first byte (the standard's "bit 1").
 */

type Bits = readonly number[];

// Tables of FIPS 46-3, 1-based bit positions as printed in the standard.
const INITIAL_PERMUTATION = [
  58, 50, 42, 34, 26, 18, 10, 2, 60, 52, 44, 36, 28, 20, 12, 4, 62, 54, 46, 38, 30, 22, 14, 6, 64, 56, 48, 40,
  32, 24, 16, 8, 57, 49, 41, 33, 25, 17, 9, 1, 59, 51, 43, 35, 27, 19, 11, 3, 61, 53, 45, 37, 29, 21, 13, 5,
  63, 55, 47, 39, 31, 23, 15, 7,
];

const PERMUTATION_P = [
  16, 7, 20, 21, 29, 12, 28, 17, 1, 15, 23, 26, 5, 18, 31, 10, 2, 8, 24, 14, 32, 27, 3, 9, 19, 13, 30, 6, 22,
  11, 4, 25,
];

const PERMUTED_CHOICE_1 = [
  57, 49, 41, 33, 25, 17, 9, 1, 58, 50, 42, 34, 26, 18, 10, 2, 59, 51, 43, 35, 27, 19, 11, 3, 60, 52, 44, 36,
  63, 55, 47, 39, 31, 23, 15, 7, 62, 54, 46, 38, 30, 22, 14, 6, 61, 53, 45, 37, 29, 21, 13, 5, 28, 20, 12, 4,
];

const PERMUTED_CHOICE_2 = [
  14, 17, 11, 24, 1, 5, 3, 28, 15, 6, 21, 10, 23, 19, 12, 4, 26, 8, 16, 7, 27, 20, 13, 2, 41, 52, 31, 37, 47,
  55, 30, 40, 51, 45, 33, 48, 44, 49, 39, 56, 34, 53, 46, 42, 50, 36, 29, 32,
];

const KEY_ROTATIONS = [1, 1, 2, 2, 2, 2, 2, 2, 1, 2, 2, 2, 2, 2, 2, 1];

/** S1..S8, each 4 rows of 16 columns. */
const S_BOXES = [
  [
    14, 4, 13, 1, 2, 15, 11, 8, 3, 10, 6, 12, 5, 9, 0, 7, 0, 15, 7, 4, 14, 2, 13, 1, 10, 6, 12, 11, 9, 5, 3,
    8, 4, 1, 14, 8, 13, 6, 2, 11, 15, 12, 9, 7, 3, 10, 5, 0, 15, 12, 8, 2, 4, 9, 1, 7, 5, 11, 3, 14, 10, 0, 6,
    13,
  ],
  [
    15, 1, 8, 14, 6, 11, 3, 4, 9, 7, 2, 13, 12, 0, 5, 10, 3, 13, 4, 7, 15, 2, 8, 14, 12, 0, 1, 10, 6, 9, 11,
    5, 0, 14, 7, 11, 10, 4, 13, 1, 5, 8, 12, 6, 9, 3, 2, 15, 13, 8, 10, 1, 3, 15, 4, 2, 11, 6, 7, 12, 0, 5,
    14, 9,
  ],
  [
    10, 0, 9, 14, 6, 3, 15, 5, 1, 13, 12, 7, 11, 4, 2, 8, 13, 7, 0, 9, 3, 4, 6, 10, 2, 8, 5, 14, 12, 11, 15,
    1, 13, 6, 4, 9, 8, 15, 3, 0, 11, 1, 2, 12, 5, 10, 14, 7, 1, 10, 13, 0, 6, 9, 8, 7, 4, 15, 14, 3, 11, 5, 2,
    12,
  ],
  [
    7, 13, 14, 3, 0, 6, 9, 10, 1, 2, 8, 5, 11, 12, 4, 15, 13, 8, 11, 5, 6, 15, 0, 3, 4, 7, 2, 12, 1, 10, 14,
    9, 10, 6, 9, 0, 12, 11, 7, 13, 15, 1, 3, 14, 5, 2, 8, 4, 3, 15, 0, 6, 10, 1, 13, 8, 9, 4, 5, 11, 12, 7, 2,
    14,
  ],
  [
    2, 12, 4, 1, 7, 10, 11, 6, 8, 5, 3, 15, 13, 0, 14, 9, 14, 11, 2, 12, 4, 7, 13, 1, 5, 0, 15, 10, 3, 9, 8,
    6, 4, 2, 1, 11, 10, 13, 7, 8, 15, 9, 12, 5, 6, 3, 0, 14, 11, 8, 12, 7, 1, 14, 2, 13, 6, 15, 0, 9, 10, 4,
    5, 3,
  ],
  [
    12, 1, 10, 15, 9, 2, 6, 8, 0, 13, 3, 4, 14, 7, 5, 11, 10, 15, 4, 2, 7, 12, 9, 5, 6, 1, 13, 14, 0, 11, 3,
    8, 9, 14, 15, 5, 2, 8, 12, 3, 7, 0, 4, 10, 1, 13, 11, 6, 4, 3, 2, 12, 9, 5, 15, 10, 11, 14, 1, 7, 6, 0, 8,
    13,
  ],
  [
    4, 11, 2, 14, 15, 0, 8, 13, 3, 12, 9, 7, 5, 10, 6, 1, 13, 0, 11, 7, 4, 9, 1, 10, 14, 3, 5, 12, 2, 15, 8,
    6, 1, 4, 11, 13, 12, 3, 7, 14, 10, 15, 6, 8, 0, 5, 9, 2, 6, 11, 13, 8, 1, 4, 10, 7, 9, 5, 0, 15, 14, 2, 3,
    12,
  ],
  [
    13, 2, 8, 4, 6, 15, 11, 1, 10, 9, 3, 14, 5, 0, 12, 7, 1, 15, 13, 8, 10, 3, 7, 4, 12, 5, 6, 11, 0, 14, 9,
    2, 7, 11, 4, 1, 9, 12, 14, 2, 0, 6, 10, 13, 15, 3, 5, 8, 2, 1, 14, 7, 4, 10, 8, 13, 15, 12, 9, 0, 3, 5, 6,
    11,
  ],
];

/** The final permutation is the inverse of the initial one; deriving it leaves one table less to mistype. */
const FINAL_PERMUTATION = INITIAL_PERMUTATION.map((_, i) => INITIAL_PERMUTATION.indexOf(i + 1) + 1);

/** E: each 4-bit group of R, widened by the neighbouring bit on either side (wrapping around). */
const EXPANSION = Array.from({ length: 48 }, (_, i) => {
  const group = Math.floor(i / 6);
  return ((4 * group + (i % 6) - 1 + 32) % 32) + 1;
});

export function desEncryptBlock(key: Uint8Array, block: Uint8Array): Buffer {
  if (key.length !== 8 || block.length !== 8) {
    throw new RangeError("DES takes an 8-byte key and an 8-byte block");
  }
  const subkeys = keySchedule(toBits(key));
  const permuted = permute(toBits(block), INITIAL_PERMUTATION);
  let left = permuted.slice(0, 32);
  let right = permuted.slice(32);
  for (const subkey of subkeys) {
    [left, right] = [right, xor(left, feistel(right, subkey))];
  }
  return fromBits(permute([...right, ...left], FINAL_PERMUTATION));
}

function keySchedule(key: Bits): Bits[] {
  const choice = permute(key, PERMUTED_CHOICE_1);
  let c = choice.slice(0, 28);
  let d = choice.slice(28);
  return KEY_ROTATIONS.map((rotation) => {
    c = [...c.slice(rotation), ...c.slice(0, rotation)];
    d = [...d.slice(rotation), ...d.slice(0, rotation)];
    return permute([...c, ...d], PERMUTED_CHOICE_2);
  });
}

function feistel(right: Bits, subkey: Bits): Bits {
  const mixed = xor(permute(right, EXPANSION), subkey);
  const substituted: number[] = [];
  S_BOXES.forEach((box, i) => {
    const [b0, b1, b2, b3, b4, b5] = mixed.slice(6 * i, 6 * i + 6);
    const row = ((b0 ?? 0) << 1) | (b5 ?? 0);
    const column = ((b1 ?? 0) << 3) | ((b2 ?? 0) << 2) | ((b3 ?? 0) << 1) | (b4 ?? 0);
    const value = box[row * 16 + column] ?? 0;
    substituted.push((value >> 3) & 1, (value >> 2) & 1, (value >> 1) & 1, value & 1);
  });
  return permute(substituted, PERMUTATION_P);
}

function permute(bits: Bits, table: readonly number[]): number[] {
  return table.map((position) => bits[position - 1] ?? 0);
}

function xor(a: Bits, b: Bits): number[] {
  return a.map((bit, i) => bit ^ (b[i] ?? 0));
}

function toBits(bytes: Uint8Array): number[] {
  return Array.from({ length: bytes.length * 8 }, (_, i) => ((bytes[i >> 3] ?? 0) >> (7 - (i & 7))) & 1);
}

function fromBits(bits: Bits): Buffer {
  const bytes = Buffer.alloc(bits.length / 8);
  bits.forEach((bit, i) => {
    bytes[i >> 3] = (bytes[i >> 3] ?? 0) | (bit << (7 - (i & 7)));
  });
  return bytes;
}
