import { createCipheriv, createDecipheriv, createHmac, type Hmac, hkdfSync, randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import { deriveKeyring, type EncryptionKeys, type Keyring } from "../../credentials/cipher.ts";
import { CheckpointStoreError } from "./types.ts";

/**
 * How checkpoint objects and manifests, and recordings' chunks and videos, are sealed at rest
 * (docs/architecture.md, "Domain"):
 *
 *     "CKP1" | key id (6 bytes) | nonce prefix (7 random bytes)      the 17-byte header
 *     AES-256-GCM(chunk 0) | tag … AES-256-GCM(last chunk) | tag     64 KiB of plaintext each
 *
 * Chunks are sealed one by one (nonce = prefix | chunk number | last-chunk flag; the header and
 * the object's context are the additional data), so a large object streams in both directions,
 * a reader never hands on a byte that failed authentication, and cutting, reordering or
 * truncating chunks fails like any altered byte. The key comes from ENCRYPTION_KEY under its own
 * purpose (`deriveKeyring`), so it rotates as credentials do: new objects are sealed with the
 * current key, and an object names the key that opens it. Each purpose has its own keys, so an
 * object of one never opens as the other's.
 */
export type SealingPurpose = "checkpoints" | "recordings";
const MAGIC = Buffer.from("CKP1", "latin1");
const KEY_ID_BYTES = 6;
const PREFIX_BYTES = 7;
const HEADER_BYTES = MAGIC.length + KEY_ID_BYTES + PREFIX_BYTES;
const CHUNK_BYTES = 64 * 1024;
const TAG_BYTES = 16;
const SEALED_CHUNK_BYTES = CHUNK_BYTES + TAG_BYTES;
const EMPTY = Buffer.alloc(0);

export interface Sealing {
  /** Seals a stream of plaintext; `context` (what the object is) must be given again to open it. */
  sealer(context: string): Sealer;
  /** The plaintext of a sealed file, chunk by chunk, each authenticated before it is yielded. */
  openFile(path: string, context: string, what: string): AsyncGenerator<Buffer>;
  /** The whole plaintext of a small sealed buffer (a manifest). */
  openBuffer(sealed: Buffer, context: string, what: string): Buffer;
}

export interface CheckpointSealing extends Sealing {
  /**
   * The address of one content in one workspace: HMAC-SHA256 under that workspace's sub-key of
   * the current key. Equal files in two workspaces get unrelated addresses, so the store's names
   * and its deduplication say nothing across workspaces.
   */
  addresser(workspaceId: string): Hmac;
  /**
   * The plaintext of a sealed object of `workspaceId` (its context), chunk by chunk, each
   * authenticated before it is yielded; the last one only once the whole content also has the
   * address it is stored under, so an authentic object moved to another name fails too.
   */
  openObject(path: string, workspaceId: string, address: string, what: string): AsyncGenerator<Buffer>;
}

export interface Sealer {
  /** Sealed bytes to write for this plaintext (the header first; may be empty while a chunk fills). */
  update(plaintext: Buffer): Buffer;
  /** The last sealed chunk. */
  final(): Buffer;
}

export interface SealingOptions {
  purpose: SealingPurpose;
  /** The error a damaged, altered or unopenable object is reported as (the purpose's own). */
  damaged: (message: string) => Error;
}

interface SealingKey {
  id: string;
  aead: Buffer;
  address: Buffer;
}

function sealingKey(derived: Keyring["current"], purpose: SealingPurpose): SealingKey {
  // The purpose key is split once more, so the HMAC never uses the AES key itself.
  const address = Buffer.from(hkdfSync("sha256", derived.key, "", `cubicle/${purpose}/address/v1`, 32));
  return { id: derived.id, aead: derived.key, address };
}

export function createCheckpointSealing(keys: EncryptionKeys): CheckpointSealing {
  return createSealing(keys, {
    purpose: "checkpoints",
    damaged: (message) => new CheckpointStoreError("CORRUPT", message),
  });
}

/** Sealing for one purpose; checkpoints also address their contents with it (see addresser). */
export function createSealing(keys: EncryptionKeys, options: SealingOptions): CheckpointSealing {
  const { purpose, damaged } = options;
  const ring = deriveKeyring(keys, purpose);
  const current = sealingKey(ring.current, purpose);
  const byId = new Map([...ring.byId].map(([id, derived]) => [id, sealingKey(derived, purpose)]));
  const tampered = (what: string) =>
    damaged(`${what} failed authentication: it was altered, truncated or swapped on disk, and is not read`);

  // derived once per key and workspace: a write addresses every file of a home with the same one
  const workspaceKeys = new Map<string, Buffer>();
  const workspaceAddresser = (key: SealingKey, workspaceId: string) => {
    const name = `${key.id}/${workspaceId}`;
    let derived = workspaceKeys.get(name);
    if (!derived) {
      derived = Buffer.from(
        hkdfSync("sha256", key.address, "", `cubicle/${purpose}/workspace/${workspaceId}`, 32),
      );
      workspaceKeys.set(name, derived);
    }
    return createHmac("sha256", derived);
  };

  const nonce = (prefix: Buffer, index: number, last: boolean) => {
    const value = Buffer.alloc(12);
    prefix.copy(value, 0);
    value.writeUInt32BE(index, PREFIX_BYTES);
    value[11] = last ? 1 : 0;
    return value;
  };

  const keyOf = (header: Buffer, what: string): SealingKey => {
    if (header.length < HEADER_BYTES || !header.subarray(0, MAGIC.length).equals(MAGIC)) {
      throw damaged(
        `${what} is not sealed (written before encryption at rest, or damaged); it cannot be read`,
      );
    }
    const id = header.subarray(MAGIC.length, MAGIC.length + KEY_ID_BYTES).toString("hex");
    const key = byId.get(id);
    if (!key) {
      throw damaged(
        `${what} was sealed with key id ${id}, which is neither ENCRYPTION_KEY nor in ENCRYPTION_KEYS_PREVIOUS`,
      );
    }
    return key;
  };

  const openChunk = (
    key: SealingKey,
    header: Buffer,
    context: string,
    index: number,
    last: boolean,
    sealed: Buffer,
    what: string,
  ): Buffer => {
    const prefix = header.subarray(MAGIC.length + KEY_ID_BYTES, HEADER_BYTES);
    const decipher = createDecipheriv("aes-256-gcm", key.aead, nonce(prefix, index, last), {
      authTagLength: TAG_BYTES,
    });
    decipher.setAAD(Buffer.concat([header, Buffer.from(context, "utf8")]));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    try {
      return Buffer.concat([
        decipher.update(sealed.subarray(0, sealed.length - TAG_BYTES)),
        decipher.final(),
      ]);
    } catch {
      throw tampered(what);
    }
  };

  /** How many chunks a sealed body of this length holds, or why it cannot be one. */
  const chunkCount = (bodyBytes: number, what: string): number => {
    const count = Math.max(1, Math.ceil(bodyBytes / SEALED_CHUNK_BYTES));
    const lastBytes = bodyBytes - (count - 1) * SEALED_CHUNK_BYTES;
    if (lastBytes < TAG_BYTES) throw tampered(what);
    return count;
  };

  /** A sealed file's chunks in order, each authenticated; `onKey` learns the key that sealed it. */
  async function* openChunks(
    path: string,
    context: string,
    what: string,
    onKey: (key: SealingKey) => void = () => undefined,
  ): AsyncGenerator<{ plaintext: Buffer; last: boolean }> {
    const handle = await fs.open(path, "r");
    try {
      const { size } = await handle.stat();
      const header = Buffer.alloc(HEADER_BYTES);
      await handle.read(header, 0, HEADER_BYTES, 0);
      const key = keyOf(header, what);
      onKey(key);
      const count = chunkCount(size - HEADER_BYTES, what);
      for (let index = 0; index < count; index += 1) {
        const offset = HEADER_BYTES + index * SEALED_CHUNK_BYTES;
        const length = Math.min(SEALED_CHUNK_BYTES, size - offset);
        const sealed = Buffer.alloc(length);
        const { bytesRead } = await handle.read(sealed, 0, length, offset);
        if (bytesRead !== length) throw tampered(what);
        const last = index === count - 1;
        yield { plaintext: openChunk(key, header, context, index, last, sealed, what), last };
      }
    } finally {
      await handle.close();
    }
  }

  async function* openFile(path: string, context: string, what: string): AsyncGenerator<Buffer> {
    for await (const { plaintext } of openChunks(path, context, what)) yield plaintext;
  }

  return {
    addresser: (workspaceId) => workspaceAddresser(current, workspaceId),

    sealer(context) {
      const header = Buffer.concat([MAGIC, Buffer.from(current.id, "hex"), randomBytes(PREFIX_BYTES)]);
      const prefix = header.subarray(MAGIC.length + KEY_ID_BYTES);
      const aad = Buffer.concat([header, Buffer.from(context, "utf8")]);
      let index = 0;
      let pending: Buffer[] = [];
      let pendingBytes = 0;
      let headerWritten = false;
      const seal = (plaintext: Buffer, last: boolean) => {
        const cipher = createCipheriv("aes-256-gcm", current.aead, nonce(prefix, index++, last), {
          authTagLength: TAG_BYTES,
        });
        cipher.setAAD(aad);
        return Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
      };
      const start = (): Buffer[] => {
        if (headerWritten) return [];
        headerWritten = true;
        return [header];
      };
      return {
        update(plaintext) {
          const out = start();
          // a full chunk is sealed only once more follows, because the last one is flagged
          if (pendingBytes + plaintext.length <= CHUNK_BYTES) {
            pending.push(plaintext);
            pendingBytes += plaintext.length;
            return out.length === 0 ? EMPTY : Buffer.concat(out);
          }
          const all = pendingBytes === 0 ? plaintext : Buffer.concat([...pending, plaintext]);
          let offset = 0;
          for (; all.length - offset > CHUNK_BYTES; offset += CHUNK_BYTES) {
            out.push(seal(all.subarray(offset, offset + CHUNK_BYTES), false));
          }
          pending = [all.subarray(offset)];
          pendingBytes = all.length - offset;
          return Buffer.concat(out);
        },
        final() {
          const out = start();
          out.push(seal(Buffer.concat(pending), true));
          pending = [];
          pendingBytes = 0;
          return Buffer.concat(out);
        },
      };
    },

    openFile: (path, context, what) => openFile(path, context, what),

    async *openObject(path, workspaceId, address, what) {
      let addressing: Hmac | undefined;
      // the address is recomputed under the key that sealed the object, which may be a previous one
      const onKey = (key: SealingKey) => {
        addressing = workspaceAddresser(key, workspaceId);
      };
      for await (const { plaintext, last } of openChunks(path, workspaceId, what, onKey)) {
        addressing?.update(plaintext);
        if (last && addressing?.digest("hex") !== address) throw tampered(what);
        yield plaintext;
      }
    },

    openBuffer(sealed, context, what) {
      const header = sealed.subarray(0, HEADER_BYTES);
      const key = keyOf(header, what);
      const count = chunkCount(sealed.length - HEADER_BYTES, what);
      const parts: Buffer[] = [];
      for (let index = 0; index < count; index += 1) {
        const offset = HEADER_BYTES + index * SEALED_CHUNK_BYTES;
        const chunk = sealed.subarray(offset, Math.min(offset + SEALED_CHUNK_BYTES, sealed.length));
        parts.push(openChunk(key, header, context, index, index === count - 1, chunk, what));
      }
      return Buffer.concat(parts);
    },
  };
}
