import { createCipheriv } from "node:crypto";

/**
 * One block of single DES. Node's OpenSSL 3 has no plain `des-ecb` in its default provider, but
 * triple DES with the key repeated three times (K, K, K) is single DES: the second pass decrypts
 * what the first encrypted, and the third encrypts once more.
 */
export function desEncryptBlock(key: Uint8Array, block: Uint8Array): Buffer {
  if (key.length !== 8 || block.length !== 8) throw new RangeError("DES keys and blocks are 8 bytes");
  const cipher = createCipheriv("des-ede3-ecb", Buffer.concat([key, key, key]), null);
  cipher.setAutoPadding(false);
  return Buffer.concat([cipher.update(block), cipher.final()]);
}

/**
 * The 16-byte response of VNC Authentication (RFC 6143 §7.2.2): the challenge encrypted with DES-ECB
 * under the password. The key is the password's first 8 bytes, zero-padded, with the bits of every byte
 * reversed: the reference implementation fed bytes to its DES least significant bit first, and every VNC
 * server since has kept that quirk.
 */
export function vncAuthResponse(password: string, challenge: Uint8Array): Buffer {
  if (challenge.length !== 16) throw new RangeError("a VNC challenge is 16 bytes");
  const key = Buffer.alloc(8);
  Buffer.from(password, "utf8").copy(key, 0, 0, 8);
  const reversedKey = key.map(reverseBits);
  return Buffer.concat([
    desEncryptBlock(reversedKey, challenge.subarray(0, 8)),
    desEncryptBlock(reversedKey, challenge.subarray(8, 16)),
  ]);
}

export function reverseBits(byte: number): number {
  let reversed = 0;
  for (let bit = 0; bit < 8; bit++) {
    reversed = (reversed << 1) | ((byte >> bit) & 1);
  }
  return reversed;
}
