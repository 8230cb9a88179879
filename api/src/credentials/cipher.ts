import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

const ALGORITHM = "aes-256-gcm";
const HKDF_SALT = "cubicle";
const CREDENTIALS_PURPOSE = "connector-credentials";
const KEY_ID_LENGTH = 12;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_ID_PATTERN = /^[0-9a-f]{12}$/;
const BASE64URL_PATTERN = /^[A-Za-z0-9_-]+$/;

/** Thrown for any ciphertext that cannot be opened; messages never carry plaintext or key material. */
export class CredentialDecryptError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CredentialDecryptError";
  }
}

export interface CredentialCipher {
  /** Id of the current key; every value produced by `encrypt` starts with it. */
  readonly keyId: string;
  encrypt(plaintext: string, context: string): string;
  decrypt(sealed: string, context: string): string;
}

/** ENCRYPTION_KEY and ENCRYPTION_KEYS_PREVIOUS, as the secrets resolve them. */
export interface EncryptionKeys {
  current: string;
  previous: readonly string[];
}

export interface DerivedKey {
  /** 12 hex digits naming the raw key, stored beside everything sealed with it. */
  id: string;
  /** 32 bytes for AES-256-GCM, derived for one purpose only. */
  key: Buffer;
}

/** The current key seals; every key, current or previous, opens what carries its id. */
export interface Keyring {
  current: DerivedKey;
  byId: ReadonlyMap<string, DerivedKey>;
}

function deriveKey(raw: string, purpose: string): DerivedKey {
  if (raw === "") throw new Error("encryption keys must not be empty");
  const key = Buffer.from(hkdfSync("sha256", raw, HKDF_SALT, `cubicle/${purpose}/aes-256-gcm/v1`, 32));
  // A separate HKDF output, so publishing the id reveals nothing about the AES key.
  const id = Buffer.from(hkdfSync("sha256", raw, HKDF_SALT, `cubicle/${purpose}/key-id/v1`, 16))
    .toString("hex")
    .slice(0, KEY_ID_LENGTH);
  return { id, key };
}

/**
 * The one derivation of sub-keys from ENCRYPTION_KEY, for every purpose that encrypts at rest
 * (connector credentials, checkpoints). A distinct purpose gives unrelated keys and key ids, so
 * nothing sealed for one purpose opens as another. Rotation works the same for all: previous keys
 * only open, and whatever is sealed names its key by id.
 */
export function deriveKeyring(keys: EncryptionKeys, purpose: string): Keyring {
  const current = deriveKey(keys.current, purpose);
  const byId = new Map<string, DerivedKey>([[current.id, current]]);
  for (const raw of keys.previous) {
    const derived = deriveKey(raw, purpose);
    if (!byId.has(derived.id)) byId.set(derived.id, derived);
  }
  return { current, byId };
}

function decodeBase64url(part: string): Buffer | undefined {
  if (!BASE64URL_PATTERN.test(part)) return undefined;
  const bytes = Buffer.from(part, "base64url");
  // Buffer decoding is lenient; requiring a canonical round trip rejects altered trailing bits.
  return bytes.toString("base64url") === part ? bytes : undefined;
}

function parseSealed(sealed: string): { keyId: string; iv: Buffer; body: Buffer } {
  const parts = sealed.split(".");
  if (parts.length !== 3) throw new CredentialDecryptError("malformed credential ciphertext");
  const [keyId = "", ivPart = "", bodyPart = ""] = parts;
  if (!KEY_ID_PATTERN.test(keyId)) throw new CredentialDecryptError("malformed credential ciphertext");
  const iv = decodeBase64url(ivPart);
  const body = decodeBase64url(bodyPart);
  if (iv === undefined || iv.length !== IV_BYTES || body === undefined || body.length < TAG_BYTES) {
    throw new CredentialDecryptError("malformed credential ciphertext");
  }
  return { keyId, iv, body };
}

/**
 * Builds the cipher for connector credentials. `previous` keys only decrypt, which is what lets an operator
 * rotate ENCRYPTION_KEY without losing stored credentials.
 */
export function createCredentialCipher(keys: EncryptionKeys): CredentialCipher {
  const { current, byId } = deriveKeyring(keys, CREDENTIALS_PURPOSE);

  return {
    keyId: current.id,

    encrypt(plaintext, context) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv(ALGORITHM, current.key, iv, { authTagLength: TAG_BYTES });
      // Binding the row identity as AAD stops a ciphertext from being copied onto another row.
      cipher.setAAD(Buffer.from(context, "utf8"));
      const ciphertext = Buffer.concat([
        cipher.update(plaintext, "utf8"),
        cipher.final(),
        cipher.getAuthTag(),
      ]);
      return `${current.id}.${iv.toString("base64url")}.${ciphertext.toString("base64url")}`;
    },

    decrypt(sealed, context) {
      const { keyId, iv, body } = parseSealed(sealed);
      const key = byId.get(keyId)?.key;
      if (key === undefined) {
        throw new CredentialDecryptError(
          `credential was encrypted with unknown key id ${keyId}; add that key to ENCRYPTION_KEYS_PREVIOUS`,
        );
      }
      const decipher = createDecipheriv(ALGORITHM, key, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(context, "utf8"));
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
      try {
        const plaintext = Buffer.concat([
          decipher.update(body.subarray(0, body.length - TAG_BYTES)),
          decipher.final(),
        ]);
        return plaintext.toString("utf8");
      } catch {
        throw new CredentialDecryptError(
          "credential failed authentication (tampered, wrong context, or wrong key for its key id)",
        );
      }
    },
  };
}

/**
 * Returns `sealed` re-encrypted under the current key when it was made with a previous one, or undefined when
 * it is already current. Run over stored rows after a rotation so the old key can eventually be retired.
 */
export function reencryptIfStale(
  cipher: CredentialCipher,
  sealed: string,
  context: string,
): string | undefined {
  if (sealed.startsWith(`${cipher.keyId}.`)) return undefined;
  return cipher.encrypt(cipher.decrypt(sealed, context), context);
}
