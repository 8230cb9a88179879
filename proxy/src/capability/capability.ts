import { randomUUID } from "node:crypto";
import type { ScreenTarget } from "@cubicle/providers/contract";
import { CompactEncrypt, compactDecrypt } from "jose";
import type { CapabilityKey, CapabilityKeyring } from "./keys.ts";
import { CAPABILITY_MODES, type ScreenMode } from "./modes.ts";
import { CapabilityRefused, isClaimId, type SignedTokenKind, sign, verify } from "./signed.ts";

/** Longer than any origin a browser sends for a real site; a longer claim is not one. */
const MAX_ORIGIN_LENGTH = 2_048;

/** A capability only opens a socket; the socket then lives as long as its mode allows. */
export const MAX_CAPABILITY_TTL_SECONDS = 60;

const SCREEN_CAPABILITY: SignedTokenKind = {
  type: "cubicle-screen+jwt",
  issuer: "cubicle-api",
  audience: "cubicle-proxy",
  maxLifetimeSeconds: MAX_CAPABILITY_TTL_SECONDS,
};

/** The WebSocket subprotocol a browser names beside its token, and the one the proxy answers with. */
export const SCREEN_PROTOCOL = "cubicle.screen.v1";
/**
 * The same, plus the proxy's status in text frames beside the RFB binary ones (who controls the
 * screen, when a control lease ends): what `@cubicle/viewer` asks for. Plain RFB clients name
 * SCREEN_PROTOCOL and never get a text frame.
 */
export const SCREEN_STATUS_PROTOCOL = "cubicle.screen.v1.status";
/** The one path screen sockets open on, below the proxy's public URL. */
export const SCREEN_PATH = "/screen";

export interface CapabilityGrant {
  /** Who opens the socket: `user:<id>` or `api_key:<id>`. */
  subject: string;
  workspaceId: string;
  computerId: string;
  screen: number;
  mode: ScreenMode;
  /** The control lease the socket lives under; present exactly when `mode` is `control`. */
  controlLeaseId?: string;
  /**
   * The recording the proxy streams this socket into (claim `rec`): api's catalogue row, created
   * when it minted the capability. Always present in `record` mode.
   */
  recordingId?: string;
  /**
   * The one web origin (claim `org`) whose pages may open the socket: an embedding app mints for
   * its own page, so a token carried off to another site is refused there.
   */
  origin?: string;
  /** Sealed into the token; never readable by its bearer. */
  target: ScreenTarget;
}

export interface MintedCapability {
  token: string;
  jti: string;
  expiresAt: Date;
}

export interface VerifiedCapability extends CapabilityGrant {
  jti: string;
  issuedAt: Date;
  expiresAt: Date;
  keyId: string;
}

/** Remembers presented token ids; `claim` is true only the first time an id is presented. */
export interface ReplayGuard {
  claim(jti: string, expiresAt: Date): Promise<boolean>;
}

export async function mintCapability(
  keyring: CapabilityKeyring,
  grant: CapabilityGrant,
  options: { ttlSeconds?: number; now?: Date } = {},
): Promise<MintedCapability> {
  checkGrant(grant);
  const key = keyring.current;
  const jti = randomUUID();
  const issuedAt = Math.floor((options.now ?? new Date()).getTime() / 1000);
  const ttl = options.ttlSeconds ?? MAX_CAPABILITY_TTL_SECONDS;
  const payload = {
    sub: grant.subject,
    jti,
    ws: grant.workspaceId,
    cmp: grant.computerId,
    scr: grant.screen,
    mode: grant.mode,
    ...(grant.controlLeaseId === undefined ? {} : { lease: grant.controlLeaseId }),
    ...(grant.recordingId === undefined ? {} : { rec: grant.recordingId }),
    ...(grant.origin === undefined ? {} : { org: grant.origin }),
    tgt: await seal(key, { for: bindingOf(grant), target: grant.target }),
  };
  const token = await sign(SCREEN_CAPABILITY, key, payload, issuedAt, ttl);
  return { token, jti, expiresAt: new Date((issuedAt + ttl) * 1000) };
}

/**
 * Accepts a token once: pinned algorithm, known key id, our issuer and audience, within its time,
 * well-formed claims, an intact sealed target sealed for exactly these claims, and a `jti` never
 * presented before.
 */
export async function verifyCapability(
  keyring: CapabilityKeyring,
  token: unknown,
  options: { replay: ReplayGuard; now?: Date },
): Promise<VerifiedCapability> {
  const { payload, key } = await verify(SCREEN_CAPABILITY, keyring, token, options.now ?? new Date());
  const { ws, cmp, scr, mode, lease, rec, org, tgt } = payload;
  if (
    !isClaimId(ws) ||
    !isClaimId(cmp) ||
    typeof scr !== "number" ||
    typeof mode !== "string" ||
    !(CAPABILITY_MODES as readonly string[]).includes(mode) ||
    (lease !== undefined && !isClaimId(lease)) ||
    (rec !== undefined && !isClaimId(rec)) ||
    (org !== undefined && (typeof org !== "string" || org.length > MAX_ORIGIN_LENGTH)) ||
    typeof tgt !== "string"
  )
    throw new CapabilityRefused("claims");
  const sealed = await unseal(key, tgt);
  const grant: CapabilityGrant = {
    subject: payload.sub,
    workspaceId: ws,
    computerId: cmp,
    screen: scr,
    mode: mode as ScreenMode,
    ...(lease === undefined ? {} : { controlLeaseId: lease }),
    ...(rec === undefined ? {} : { recordingId: rec }),
    ...(org === undefined ? {} : { origin: org as string }),
    target: sealed.target,
  };
  try {
    checkGrant(grant);
  } catch {
    throw new CapabilityRefused("claims");
  }
  // Logs, limits, activity and revocation all go by the claims; they must name what the target is.
  if (JSON.stringify(bindingOf(grant)) !== JSON.stringify(sealed.for))
    throw new CapabilityRefused("target-mismatch");
  const expiresAt = new Date(payload.exp * 1000);
  if (!(await options.replay.claim(payload.jti, expiresAt))) throw new CapabilityRefused("replayed");
  return { ...grant, jti: payload.jti, issuedAt: new Date(payload.iat * 1000), expiresAt, keyId: key.id };
}

function checkGrant(grant: CapabilityGrant): void {
  if (!Number.isInteger(grant.screen) || grant.screen < 0 || grant.screen > 7)
    throw new RangeError("screen must be an integer from 0 to 7");
  if ((grant.mode === "control") !== (grant.controlLeaseId !== undefined))
    throw new RangeError("a control lease id comes with control mode, and only with it");
  if (grant.mode === "record" && grant.recordingId === undefined)
    throw new RangeError("a record capability names the recording it is for");
}

/**
 * The claims a target is sealed for, in one fixed shape and key order, so that the sealed copy and
 * the readable claims compare as text. The sealed copy is authenticated encryption under its own
 * key: a token whose claims were changed and signed again still carries the original identity.
 */
function bindingOf(grant: CapabilityGrant): Binding {
  return {
    sub: grant.subject,
    ws: grant.workspaceId,
    cmp: grant.computerId,
    scr: grant.screen,
    mode: grant.mode,
    lease: grant.controlLeaseId ?? null,
    // left out when absent, so that a token minted before recordings existed binds as it did
    ...(grant.recordingId === undefined ? {} : { rec: grant.recordingId }),
    ...(grant.origin === undefined ? {} : { org: grant.origin }),
  };
}

interface Binding {
  sub: string;
  ws: string;
  cmp: string;
  scr: number;
  mode: ScreenMode;
  lease: string | null;
  rec?: string;
  org?: string;
}

interface Sealed {
  for: unknown;
  target: ScreenTarget;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function seal(key: CapabilityKey, sealed: { for: Binding; target: ScreenTarget }): Promise<string> {
  return new CompactEncrypt(encoder.encode(JSON.stringify(sealed)))
    .setProtectedHeader({ alg: "dir", enc: "A256GCM", kid: key.id })
    .encrypt(key.sealing);
}

async function unseal(key: CapabilityKey, sealed: string): Promise<Sealed> {
  let plaintext: Uint8Array;
  try {
    ({ plaintext } = await compactDecrypt(sealed, key.sealing, {
      keyManagementAlgorithms: ["dir"],
      contentEncryptionAlgorithms: ["A256GCM"],
    }));
  } catch {
    throw new CapabilityRefused("sealed-target");
  }
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(plaintext));
  } catch {
    throw new CapabilityRefused("sealed-target");
  }
  const target =
    typeof value === "object" && value !== null ? parseTarget(Reflect.get(value, "target")) : undefined;
  if (!target) throw new CapabilityRefused("sealed-target");
  return { for: Reflect.get(value as object, "for"), target };
}

function parseTarget(value: unknown): ScreenTarget | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const target = value as Record<string, unknown>;
  if (target.kind === "vnc") {
    const { host, port, password } = target;
    return typeof host === "string" && Number.isInteger(port) && typeof password === "string"
      ? { kind: "vnc", host, port: port as number, password }
      : undefined;
  }
  if (target.kind === "vendor-websocket") {
    const { url, password, headers } = target;
    if (typeof url !== "string" || (password !== undefined && typeof password !== "string")) return undefined;
    if (headers !== undefined && !isStringRecord(headers)) return undefined;
    return {
      kind: "vendor-websocket",
      url,
      ...(password === undefined ? {} : { password }),
      ...(headers === undefined ? {} : { headers }),
    };
  }
  return undefined;
}

function isStringRecord(value: unknown): value is Record<string, string> {
  return (
    typeof value === "object" &&
    value !== null &&
    Object.values(value).every((entry) => typeof entry === "string")
  );
}
