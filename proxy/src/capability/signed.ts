import { errors, type JWTPayload, jwtVerify, SignJWT } from "jose";
import type { CapabilityKey, CapabilityKeyring } from "./keys.ts";

/** The one algorithm tokens are signed with; anything else (`none` included) is refused. */
const ALGORITHM = "HS256";

/**
 * The longest id a token may name (its `jti`, subject, workspace, computer, lease): what api's
 * internal routes take. A longer or empty one is a bad claim, not a reason to ask api and count
 * its refusal as api being unavailable.
 */
export const MAX_CLAIM_ID_LENGTH = 200;

export const isClaimId = (value: unknown): value is string =>
  typeof value === "string" && value.length > 0 && value.length <= MAX_CLAIM_ID_LENGTH;

export type RefusalReason =
  | "malformed"
  | "algorithm"
  | "unknown-key"
  | "signature"
  | "wrong-type"
  | "issuer"
  | "audience"
  | "expired"
  | "not-yet-valid"
  | "lifetime"
  | "claims"
  | "sealed-target"
  /** Signed with our key, but its claims name another subject or screen than its sealed target. */
  | "target-mismatch"
  | "replayed";

/** A token that is not accepted. The reason is for logs and metrics; callers see only a generic refusal. */
export class CapabilityRefused extends Error {
  constructor(
    readonly reason: RefusalReason,
    detail?: string,
  ) {
    super(detail ? `${reason}: ${detail}` : reason);
    this.name = "CapabilityRefused";
  }
}

export interface SignedTokenKind {
  /** The `typ` header: a token of one kind is never accepted as another. */
  type: string;
  issuer: string;
  audience: string;
  maxLifetimeSeconds: number;
}

export function sign(
  kind: SignedTokenKind,
  key: CapabilityKey,
  payload: JWTPayload & { sub: string; jti: string },
  issuedAtSeconds: number,
  lifetimeSeconds: number,
): Promise<string> {
  if (!(lifetimeSeconds > 0 && lifetimeSeconds <= kind.maxLifetimeSeconds))
    throw new RangeError(`a ${kind.type} lives at most ${kind.maxLifetimeSeconds} s`);
  return new SignJWT(payload)
    .setProtectedHeader({ alg: ALGORITHM, typ: kind.type, kid: key.id })
    .setIssuer(kind.issuer)
    .setAudience(kind.audience)
    .setIssuedAt(issuedAtSeconds)
    .setNotBefore(issuedAtSeconds)
    .setExpirationTime(issuedAtSeconds + lifetimeSeconds)
    .sign(key.signing);
}

export interface Verified {
  payload: JWTPayload & { sub: string; jti: string; iat: number; exp: number };
  key: CapabilityKey;
}

/** Checks header, signature and registered claims; refuses with the first reason found. */
export async function verify(
  kind: SignedTokenKind,
  keyring: CapabilityKeyring,
  token: unknown,
  now: Date,
): Promise<Verified> {
  if (typeof token !== "string" || token.length > 8192 || token.split(".").length !== 3)
    throw new CapabilityRefused("malformed");
  let key: CapabilityKey | undefined;
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(
      token,
      (header) => {
        if (header.alg !== ALGORITHM) throw new CapabilityRefused("algorithm", String(header.alg));
        key = keyring.find(header.kid);
        if (!key) throw new CapabilityRefused("unknown-key");
        return key.signing;
      },
      {
        algorithms: [ALGORITHM],
        typ: kind.type,
        issuer: kind.issuer,
        audience: kind.audience,
        currentDate: now,
        requiredClaims: ["sub", "jti", "iat", "nbf", "exp"],
      },
    ));
  } catch (error) {
    throw refusalOf(error);
  }
  const { iat, exp, sub, jti } = payload;
  if (!isClaimId(sub) || !isClaimId(jti) || typeof iat !== "number" || typeof exp !== "number")
    throw new CapabilityRefused("claims");
  // A token minted for longer than its kind allows was not minted by us, whatever its signature.
  if (exp - iat > kind.maxLifetimeSeconds || iat > now.getTime() / 1000 + 5)
    throw new CapabilityRefused("lifetime");
  if (!key) throw new CapabilityRefused("unknown-key");
  return { payload: { ...payload, sub, jti, iat, exp }, key };
}

function refusalOf(error: unknown): CapabilityRefused {
  if (error instanceof CapabilityRefused) return error;
  if (error instanceof errors.JWTExpired) return new CapabilityRefused("expired");
  if (error instanceof errors.JWTClaimValidationFailed) {
    // Only a time that has not come yet: a missing or mistyped one is a bad claim, and counting it
    // as not yet valid would pass it off as clock skew between api and proxy.
    if ((error.claim === "nbf" || error.claim === "iat") && error.reason === "check_failed")
      return new CapabilityRefused("not-yet-valid");
    if (error.claim === "aud") return new CapabilityRefused("audience");
    if (error.claim === "iss") return new CapabilityRefused("issuer");
    if (error.claim === "typ") return new CapabilityRefused("wrong-type");
    return new CapabilityRefused("claims", error.claim);
  }
  if (error instanceof errors.JOSEAlgNotAllowed) return new CapabilityRefused("algorithm");
  if (error instanceof errors.JWSSignatureVerificationFailed) return new CapabilityRefused("signature");
  return new CapabilityRefused("malformed");
}
