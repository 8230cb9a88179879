import { randomUUID } from "node:crypto";
import type { CapabilityKeyring } from "./keys.ts";
import { type SignedTokenKind, sign, verify } from "./signed.ts";

/**
 * How a proxy replica proves itself to api (to redeem token ids and follow control leases): a
 * short token signed with the capability keys. Its own type and audience keep it from ever
 * passing as a screen capability, and the reverse.
 */
const SERVICE_TOKEN: SignedTokenKind = {
  type: "cubicle-service+jwt",
  issuer: "cubicle-proxy",
  audience: "cubicle-api",
  maxLifetimeSeconds: 60,
};

export const PROXY_SUBJECT = "cubicle-proxy";

export function mintServiceToken(keyring: CapabilityKeyring, now = new Date()): Promise<string> {
  return sign(
    SERVICE_TOKEN,
    keyring.current,
    { sub: PROXY_SUBJECT, jti: randomUUID() },
    Math.floor(now.getTime() / 1000),
    SERVICE_TOKEN.maxLifetimeSeconds,
  );
}

/** Throws CapabilityRefused unless the token is a live service token of a proxy holding our keys. */
export async function verifyServiceToken(keyring: CapabilityKeyring, token: unknown, now = new Date()) {
  const { payload } = await verify(SERVICE_TOKEN, keyring, token, now);
  return { subject: payload.sub };
}
