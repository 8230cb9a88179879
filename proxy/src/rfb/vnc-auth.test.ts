import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { desEncryptBlock, reverseBits, vncAuthResponse } from "./vnc-auth.ts";

const hex = (text: string) => Buffer.from(text, "hex");

describe("desEncryptBlock", () => {
  // [key, plaintext, ciphertext]: NBS Special Publication 500-20 (variable plaintext, variable key and
  // S-box tests), the textbook example, and all-ones.
  it.each([
    ["0101010101010101", "8000000000000000", "95f8a5e5dd31d900"],
    ["0101010101010101", "0000000000000001", "166b40b44aba4bd6"],
    ["8001010101010101", "0000000000000000", "95a8d72813daa94d"],
    ["7ca110454a1a6e57", "01a1d6d039776742", "690f5b0d9a26939b"],
    ["0131d9619dc1376e", "5cd54ca83def57da", "7a389d10354bd271"],
    ["07a1133e4a0b2686", "0248d43806f67172", "868ebb51cab4599a"],
    ["133457799bbcdff1", "0123456789abcdef", "85e813540f0ab405"],
    ["0123456789abcdef", "4e6f772069732074", "3fa40e8a984d4815"],
    ["ffffffffffffffff", "ffffffffffffffff", "7359b2163e4edc58"],
  ])("key %s encrypts %s to %s", (key, plaintext, ciphertext) => {
    expect(desEncryptBlock(hex(key), hex(plaintext)).toString("hex")).toBe(ciphertext);
  });

  it("ignores the parity bits of the key", () => {
    const block = hex("0123456789abcdef");
    expect(desEncryptBlock(hex("0000000000000000"), block)).toEqual(
      desEncryptBlock(hex("0101010101010101"), block),
    );
  });

  it("rejects blocks and keys that are not 8 bytes", () => {
    expect(() => desEncryptBlock(Buffer.alloc(7), Buffer.alloc(8))).toThrow(RangeError);
    expect(() => desEncryptBlock(Buffer.alloc(8), Buffer.alloc(16))).toThrow(RangeError);
  });
});

describe("vncAuthResponse", () => {
  const challenge = hex("000102030405060708090a0b0c0d0e0f");

  it("reverses the bits of every key byte", () => {
    expect([0x01, 0x80, 0xf0, 0x12].map(reverseBits)).toEqual([0x80, 0x01, 0x0f, 0x48]);
  });

  // Computed independently: `openssl enc -des-ecb -nopad` (legacy provider) with the bit-reversed key.
  it.each([
    ["secretpw", "5002a20f40d96c59ec8a26f47ae5688d"],
    ["pw", "858600d9af143c9e6541d3dd92a835d0"],
    // Only the first 8 bytes of a password count.
    ["secretpw-and-more", "5002a20f40d96c59ec8a26f47ae5688d"],
  ])("answers a challenge for password %j", (password, response) => {
    expect(vncAuthResponse(password, challenge).toString("hex")).toBe(response);
  });

  it("matches x11vnc's own DES: x11vnc -storepasswd encrypts the password under a fixed VNC key", async () => {
    // The password file is DES(fixed key, password padded to 8 bytes) with VNC's bit-reversed key order.
    const directory = await mkdtemp(join(tmpdir(), "cubicle-des-"));
    try {
      const file = join(directory, "passwd");
      await promisify(execFile)("x11vnc", ["-storepasswd", "hunter2", file]);
      const fixedKey = Buffer.from([23, 82, 107, 6, 35, 78, 88, 7]).map(reverseBits);
      const padded = Buffer.alloc(8);
      padded.write("hunter2", "latin1");
      expect((await readFile(file)).subarray(0, 8)).toEqual(desEncryptBlock(fixedKey, padded));
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});
