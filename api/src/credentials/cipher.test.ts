import { describe, expect, it } from "vitest";
import { CredentialDecryptError, createCredentialCipher, reencryptIfStale } from "./cipher.ts";

const KEY_A = "key-a-0123456789abcdefghijklmnopqrstuvwxyz";
const KEY_B = "key-b-0123456789abcdefghijklmnopqrstuvwxyz";
const CONTEXT = "ws_1/cred_1";
const PLAINTEXT = "sk-live-very-secret-token";

const cipherA = () => createCredentialCipher({ current: KEY_A, previous: [] });

function decryptError(run: () => unknown): CredentialDecryptError {
  try {
    run();
  } catch (error) {
    if (error instanceof CredentialDecryptError) return error;
    throw error;
  }
  throw new Error("expected a CredentialDecryptError");
}

// Flips one base64url character to another valid one so the input still parses.
function flipChar(part: string, index = 0): string {
  const char = part[index];
  return `${part.slice(0, index)}${char === "A" ? "B" : "A"}${part.slice(index + 1)}`;
}

function splitSealed(sealed: string): [string, string, string] {
  const [keyId = "", iv = "", body = ""] = sealed.split(".");
  return [keyId, iv, body];
}

describe("createCredentialCipher", () => {
  it("round-trips, including empty and non-ASCII plaintext", () => {
    const cipher = cipherA();
    for (const plaintext of [PLAINTEXT, "", "pässwörd 🔑"]) {
      expect(cipher.decrypt(cipher.encrypt(plaintext, CONTEXT), CONTEXT)).toBe(plaintext);
    }
  });

  it("produces the documented format without exposing the plaintext", () => {
    const cipher = cipherA();
    const sealed = cipher.encrypt(PLAINTEXT, CONTEXT);
    expect(sealed).toMatch(/^[0-9a-f]{12}\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
    const [keyId, iv, body] = splitSealed(sealed);
    expect(keyId).toBe(cipher.keyId);
    expect(Buffer.from(iv, "base64url")).toHaveLength(12);
    expect(Buffer.from(body, "base64url")).toHaveLength(Buffer.byteLength(PLAINTEXT) + 16);
    expect(sealed).not.toContain(PLAINTEXT);
  });

  it("uses a fresh IV for every encryption", () => {
    const cipher = cipherA();
    const first = cipher.encrypt(PLAINTEXT, CONTEXT);
    const second = cipher.encrypt(PLAINTEXT, CONTEXT);
    expect(first).not.toBe(second);
    expect(splitSealed(first)[1]).not.toBe(splitSealed(second)[1]);
  });

  it("derives a stable key id per key and a different one per key", () => {
    const a = cipherA();
    expect(a.keyId).toMatch(/^[0-9a-f]{12}$/);
    expect(createCredentialCipher({ current: KEY_A, previous: [KEY_B] }).keyId).toBe(a.keyId);
    expect(createCredentialCipher({ current: KEY_B, previous: [] }).keyId).not.toBe(a.keyId);
    expect(a.encrypt(PLAINTEXT, CONTEXT).startsWith(`${a.keyId}.`)).toBe(true);
  });

  it("rejects an empty key", () => {
    expect(() => createCredentialCipher({ current: "", previous: [] })).toThrow();
  });
});

describe("key rotation", () => {
  it("decrypts old values with a previous key and rolls them forward", () => {
    const a = cipherA();
    const sealedA = a.encrypt(PLAINTEXT, CONTEXT);

    const rotated = createCredentialCipher({ current: KEY_B, previous: [KEY_A] });
    expect(rotated.keyId).not.toBe(a.keyId);
    expect(rotated.decrypt(sealedA, CONTEXT)).toBe(PLAINTEXT);
    expect(rotated.encrypt(PLAINTEXT, CONTEXT).startsWith(`${rotated.keyId}.`)).toBe(true);

    const rolled = reencryptIfStale(rotated, sealedA, CONTEXT);
    if (rolled === undefined) throw new Error("expected a re-encrypted value");
    expect(rolled.startsWith(`${rotated.keyId}.`)).toBe(true);
    expect(rotated.decrypt(rolled, CONTEXT)).toBe(PLAINTEXT);
    expect(reencryptIfStale(rotated, rolled, CONTEXT)).toBeUndefined();

    const retired = createCredentialCipher({ current: KEY_B, previous: [] });
    expect(retired.decrypt(rolled, CONTEXT)).toBe(PLAINTEXT);
    expect(decryptError(() => retired.decrypt(sealedA, CONTEXT)).message).toContain(a.keyId);
  });

  it("refuses to re-encrypt under the wrong context", () => {
    const sealedA = cipherA().encrypt(PLAINTEXT, CONTEXT);
    const rotated = createCredentialCipher({ current: KEY_B, previous: [KEY_A] });
    decryptError(() => reencryptIfStale(rotated, sealedA, "ws_1/cred_2"));
  });
});

describe("decrypt failures", () => {
  const cipher = cipherA();
  const sealed = cipher.encrypt(PLAINTEXT, CONTEXT);
  const [keyId, iv, body] = splitSealed(sealed);

  it.each([
    ["iv", `${keyId}.${flipChar(iv)}.${body}`],
    ["ciphertext", `${keyId}.${iv}.${flipChar(body)}`],
    ["tag", `${keyId}.${iv}.${flipChar(body, body.length - 2)}`],
  ])("detects a tampered %s", (_part, tampered) => {
    expect(tampered).not.toBe(sealed);
    const error = decryptError(() => cipher.decrypt(tampered, CONTEXT));
    expect(error.message).toContain("failed authentication");
    expect(error.message).not.toContain(PLAINTEXT);
  });

  it("rejects a tampered key id as unknown", () => {
    const otherId = keyId === "000000000000" ? "111111111111" : "000000000000";
    const error = decryptError(() => cipher.decrypt(`${otherId}.${iv}.${body}`, CONTEXT));
    expect(error.message).toContain("unknown key id");
  });

  it("rejects an unknown key id", () => {
    const other = createCredentialCipher({ current: KEY_B, previous: [] }).encrypt(PLAINTEXT, CONTEXT);
    const error = decryptError(() => cipher.decrypt(other, CONTEXT));
    expect(error.message).toContain("unknown key id");
    expect(error.message).not.toContain(KEY_A);
    expect(error.message).not.toContain(KEY_B);
  });

  it("rejects a ciphertext moved to another row", () => {
    const error = decryptError(() => cipher.decrypt(sealed, "ws_1/cred_2"));
    expect(error.message).not.toContain(PLAINTEXT);
  });

  it.each([
    ["empty", ""],
    ["two parts", `${keyId}.${iv}`],
    ["four parts", `${sealed}.x`],
    ["bad key id", `XYZ.${iv}.${body}`],
    ["non-base64url iv", `${keyId}.${iv.slice(0, -1)}+.${body}`],
    ["short iv", `${keyId}.${iv.slice(0, 8)}.${body}`],
    ["truncated tag", `${keyId}.${iv}.${body.slice(0, 10)}`],
    // 17 base64url chars still decode to 12 bytes, so only the canonical check catches this.
    ["non-canonical base64url", `${keyId}.${iv}A.${body}`],
  ])("rejects malformed input: %s", (_case, input) => {
    expect(decryptError(() => cipher.decrypt(input, CONTEXT)).message).toBe(
      "malformed credential ciphertext",
    );
  });
});
