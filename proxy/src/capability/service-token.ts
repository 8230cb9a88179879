import { randomUUID } from "node:crypto";
import type { CapabilityKeyring } from "./keys.ts";
import { type SignedTokenKind, sign, verify } from "./signed.ts";

/**
 * How Cubicle's own processes prove themselves to the api's internal routes: a short token signed
 * with the capability keys. A proxy replica redeems token ids and follows control leases; `cubicle
 * doctor` reads what the running api chose. Each has its own type and issuer, and every one the
 * api's audience, so none passes as another or as a screen capability, and the reverse.
 */
const SERVICE_TOKENS = {
  proxy: {
    type: "cubicle-service+jwt",
    issuer: "cubicle-proxy",
    audience: "cubicle-api",
    maxLifetimeSeconds: 60,
  },
  doctor: {
    type: "cubicle-doctor+jwt",
    issuer: "cubicle-doctor",
    audience: "cubicle-api",
    maxLifetimeSeconds: 60,
  },
} as const satisfies Record<string, SignedTokenKind>;

export type ServiceName = keyof typeof SERVICE_TOKENS;

export function mintServiceToken(
  keyring: CapabilityKeyring,
  service: ServiceName,
  now = new Date(),
): Promise<string> {
  const kind = SERVICE_TOKENS[service];
  return sign(
    kind,
    keyring.current,
    { sub: kind.issuer, jti: randomUUID() },
    Math.floor(now.getTime() / 1000),
    kind.maxLifetimeSeconds,
  );
}

/** Throws CapabilityRefused unless the token is a live token of `service` holding our keys. */
export async function verifyServiceToken(
  keyring: CapabilityKeyring,
  service: ServiceName,
  token: unknown,
  now = new Date(),
) {
  const { payload } = await verify(SERVICE_TOKENS[service], keyring, token, now);
  return { subject: payload.sub };
}
