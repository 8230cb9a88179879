import { hkdfSync } from "node:crypto";

const HKDF_SALT = "cubicle";
const SIGNING_INFO = "cubicle/screen-capability/hs256/v1";
const SEALING_INFO = "cubicle/screen-capability/a256gcm/v1";
const KEY_ID_INFO = "cubicle/screen-capability/key-id/v1";

export interface CapabilityKey {
  /** Published in every token header; a separate HKDF output, so it reveals nothing about the keys. */
  readonly id: string;
  readonly signing: Uint8Array;
  readonly sealing: Uint8Array;
}

export interface CapabilityKeySecrets {
  /** Signs and seals every new token. */
  current: string;
  /** Still accepted, so tokens minted just before a rotation stay valid for their last seconds. */
  previous?: readonly string[];
}

/**
 * The keys api mints with and the proxy verifies with. Both processes build it from the same
 * secrets (`SCREEN_CAPABILITY_KEY`, `SCREEN_CAPABILITY_PREVIOUS_KEYS`); signing and sealing keys
 * are derived apart, so neither the raw secret nor one purpose's key serves the other.
 */
export class CapabilityKeyring {
  readonly current: CapabilityKey;
  private readonly byId: Map<string, CapabilityKey>;

  constructor(secrets: CapabilityKeySecrets) {
    this.current = deriveKey(secrets.current);
    this.byId = new Map([[this.current.id, this.current]]);
    for (const secret of secrets.previous ?? []) {
      const key = deriveKey(secret);
      if (!this.byId.has(key.id)) this.byId.set(key.id, key);
    }
  }

  find(id: unknown): CapabilityKey | undefined {
    return typeof id === "string" ? this.byId.get(id) : undefined;
  }
}

function deriveKey(secret: string): CapabilityKey {
  if (secret === "") throw new Error("screen capability keys must not be empty");
  const derive = (info: string, bytes: number) =>
    new Uint8Array(hkdfSync("sha256", secret, HKDF_SALT, info, bytes));
  return {
    id: Buffer.from(derive(KEY_ID_INFO, 9)).toString("base64url"),
    signing: derive(SIGNING_INFO, 32),
    sealing: derive(SEALING_INFO, 32),
  };
}
