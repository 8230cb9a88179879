import { createHmac } from "node:crypto";
import { SignJWT, UnsecuredJWT } from "jose";
import { describe, expect, it } from "vitest";
import {
  type CapabilityGrant,
  CapabilityKeyring,
  CapabilityRefused,
  type MintedCapability,
  mintCapability,
  mintServiceToken,
  type RefusalReason,
  type ReplayGuard,
  verifyCapability,
  verifyServiceToken,
} from "./index.ts";

const SECRET = "s".repeat(48);
const keyring = new CapabilityKeyring({ current: SECRET });

const grant: CapabilityGrant = {
  subject: "user:u1",
  workspaceId: "ws-a",
  computerId: "cmp-1",
  screen: 2,
  mode: "view",
  target: { kind: "vnc", host: "10.9.8.7", port: 49152, password: "pw-3x9Q" },
};

function freshGuard(): ReplayGuard {
  const seen = new Set<string>();
  return {
    async claim(jti) {
      if (seen.has(jti)) return false;
      seen.add(jti);
      return true;
    },
  };
}

async function refusal(token: unknown, options: { ring?: CapabilityKeyring; now?: Date } = {}) {
  try {
    await verifyCapability(options.ring ?? keyring, token, {
      replay: freshGuard(),
      ...(options.now ? { now: options.now } : {}),
    });
  } catch (error) {
    if (error instanceof CapabilityRefused) return error.reason;
    throw error;
  }
  return "accepted";
}

function decodePart(token: string, index: number): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split(".")[index] ?? "", "base64url").toString("utf8"));
}

/** Re-signs a payload with the real key, so only the property under test is wrong. */
function resign(token: string, change: (payload: Record<string, unknown>) => void): Promise<string> {
  const header = decodePart(token, 0);
  const payload = decodePart(token, 1);
  change(payload);
  return new SignJWT(payload).setProtectedHeader(header as { alg: string }).sign(keyring.current.signing);
}

describe("screen capabilities", () => {
  it("round-trip: the proxy reads back the grant, with the target unsealed", async () => {
    const minted = await mintCapability(keyring, grant);
    const verified = await verifyCapability(keyring, minted.token, { replay: freshGuard() });
    expect(verified).toMatchObject({ ...grant, jti: minted.jti, keyId: keyring.current.id });
    expect(verified.expiresAt.getTime() - verified.issuedAt.getTime()).toBe(60_000);
    expect(minted.expiresAt).toEqual(verified.expiresAt);
  });

  it("keep the target sealed: neither its host, port nor password is readable in the token", async () => {
    const { token } = await mintCapability(keyring, grant);
    const readable = token
      .split(".")
      .map((part) => Buffer.from(part, "base64url").toString("latin1"))
      .join(" ");
    for (const secret of ["10.9.8.7", "49152", "pw-3x9Q"]) expect(readable).not.toContain(secret);
    expect(decodePart(token, 0)).toEqual({
      alg: "HS256",
      typ: "cubicle-screen+jwt",
      kid: keyring.current.id,
    });
  });

  it("carry the control lease id exactly for control mode", async () => {
    const control = await mintCapability(keyring, { ...grant, mode: "control", controlLeaseId: "lease-1" });
    const verified = await verifyCapability(keyring, control.token, { replay: freshGuard() });
    expect(verified.controlLeaseId).toBe("lease-1");
    await expect(mintCapability(keyring, { ...grant, mode: "control" })).rejects.toThrow(RangeError);
    await expect(mintCapability(keyring, { ...grant, controlLeaseId: "lease-1" })).rejects.toThrow(
      RangeError,
    );
    await expect(mintCapability(keyring, { ...grant, screen: 8 })).rejects.toThrow(RangeError);
    await expect(mintCapability(keyring, grant, { ttlSeconds: 61 })).rejects.toThrow(RangeError);
  });

  it("carry a recording id, required in record mode, which takes no control lease", async () => {
    const record = { ...grant, subject: "recorder:ses-1", mode: "record", recordingId: "rec-1" } as const;
    const minted = await mintCapability(keyring, record);
    const verified = await verifyCapability(keyring, minted.token, { replay: freshGuard() });
    expect(verified).toMatchObject({ mode: "record", recordingId: "rec-1", target: grant.target });
    expect(decodePart(minted.token, 1).rec).toBe("rec-1");
    const control = await mintCapability(keyring, {
      ...grant,
      mode: "control",
      controlLeaseId: "lease-1",
      recordingId: "rec-2",
    });
    expect(await verifyCapability(keyring, control.token, { replay: freshGuard() })).toMatchObject({
      controlLeaseId: "lease-1",
      recordingId: "rec-2",
    });
    const plain = await verifyCapability(keyring, (await mintCapability(keyring, grant)).token, {
      replay: freshGuard(),
    });
    expect(plain).not.toHaveProperty("recordingId");
    await expect(mintCapability(keyring, { ...record, recordingId: undefined })).rejects.toThrow(
      "names the recording",
    );
    await expect(mintCapability(keyring, { ...record, controlLeaseId: "lease-1" })).rejects.toThrow(
      RangeError,
    );
  });

  it("are single use: a token presented twice is refused the second time", async () => {
    const { token } = await mintCapability(keyring, grant);
    const guard = freshGuard();
    await verifyCapability(keyring, token, { replay: guard });
    await expect(verifyCapability(keyring, token, { replay: guard })).rejects.toMatchObject({
      reason: "replayed",
    });
  });

  it("accept the previous key during a rotation and refuse it once it is dropped", async () => {
    const old = new CapabilityKeyring({ current: "o".repeat(48) });
    const minted: MintedCapability = await mintCapability(old, grant);
    const rotated = new CapabilityKeyring({ current: "n".repeat(48), previous: ["o".repeat(48)] });
    expect(rotated.current.id).not.toBe(old.current.id);
    expect(await refusal(minted.token, { ring: rotated })).toBe("accepted");
    const after = new CapabilityKeyring({ current: "n".repeat(48) });
    expect(await refusal(minted.token, { ring: after })).toBe("unknown-key");
  });

  const now = new Date();
  const cases: Array<[string, () => Promise<unknown>, RefusalReason]> = [
    [
      "alg none",
      async () => new UnsecuredJWT({ sub: "user:u1" }).setAudience("cubicle-proxy").encode(),
      "algorithm",
    ],
    [
      "another HMAC algorithm (HS512) with the right key",
      async () => {
        const { token } = await mintCapability(keyring, grant);
        const header = { ...decodePart(token, 0), alg: "HS512" };
        return new SignJWT(decodePart(token, 1))
          .setProtectedHeader(header as { alg: string })
          .sign(new Uint8Array(64).fill(1));
      },
      "algorithm",
    ],
    [
      "an unknown key id",
      async () =>
        mintCapability(new CapabilityKeyring({ current: "x".repeat(48) }), grant).then((m) => m.token),
      "unknown-key",
    ],
    [
      "a forged signature",
      async () => {
        const { token } = await mintCapability(keyring, grant);
        const [header, payload] = token.split(".");
        const forged = createHmac("sha256", "guess").update(`${header}.${payload}`).digest("base64url");
        return `${header}.${payload}.${forged}`;
      },
      "signature",
    ],
    [
      "the wrong audience",
      async () =>
        resign((await mintCapability(keyring, grant)).token, (p) => {
          p.aud = "cubicle-api";
        }),
      "audience",
    ],
    [
      "the wrong issuer",
      async () =>
        resign((await mintCapability(keyring, grant)).token, (p) => {
          p.iss = "someone";
        }),
      "issuer",
    ],
    [
      "an expired token",
      async () => (await mintCapability(keyring, grant, { now: new Date(now.getTime() - 120_000) })).token,
      "expired",
    ],
    [
      "a not-yet-valid token",
      async () =>
        resign((await mintCapability(keyring, grant)).token, (p) => {
          p.nbf = (p.nbf as number) + 600;
        }),
      "not-yet-valid",
    ],
    [
      "a lifetime longer than 60 s",
      async () =>
        resign((await mintCapability(keyring, grant)).token, (p) => {
          p.exp = (p.exp as number) + 3600;
        }),
      "lifetime",
    ],
    [
      "a missing jti",
      async () =>
        resign((await mintCapability(keyring, grant)).token, (p) => {
          delete p.jti;
        }),
      "claims",
    ],
    [
      "an unknown mode",
      async () =>
        resign((await mintCapability(keyring, grant)).token, (p) => {
          p.mode = "admin";
        }),
      "claims",
    ],
    [
      "view mode with a lease id smuggled in",
      async () =>
        resign((await mintCapability(keyring, grant)).token, (p) => {
          p.lease = "lease-9";
        }),
      "claims",
    ],
    [
      "a tampered sealed target",
      async () =>
        resign((await mintCapability(keyring, grant)).token, (p) => {
          const parts = String(p.tgt).split(".");
          const cipher = parts[3] ?? "";
          parts[3] = `${cipher.startsWith("A") ? "B" : "A"}${cipher.slice(1)}`;
          p.tgt = parts.join(".");
        }),
      "sealed-target",
    ],
    // Signed with the real key, so only the binding to the sealed target can tell.
    ...(
      [
        ["sub", "user:u2"],
        ["ws", "ws-b"],
        ["cmp", "cmp-2"],
        ["scr", 3],
        ["mode", "control"],
      ] as const
    ).map(([claim, other]): [string, () => Promise<unknown>, RefusalReason] => [
      `a ${claim} claim naming another ${claim === "sub" ? "subject" : "target"} than the sealed one`,
      async () =>
        resign((await mintCapability(keyring, grant)).token, (p) => {
          p[claim] = other;
          if (claim === "mode") p.lease = "lease-1";
        }),
      "target-mismatch",
    ]),
    [
      "a lease claim naming another lease than the sealed one",
      async () =>
        resign(
          (await mintCapability(keyring, { ...grant, mode: "control", controlLeaseId: "lease-1" })).token,
          (p) => {
            p.lease = "lease-2";
          },
        ),
      "target-mismatch",
    ],
    [
      "record mode without a recording id",
      async () =>
        resign((await mintCapability(keyring, grant)).token, (p) => {
          p.mode = "record";
        }),
      "claims",
    ],
    [
      "a recording id that is not an id",
      async () =>
        resign((await mintCapability(keyring, { ...grant, recordingId: "rec-1" })).token, (p) => {
          p.rec = 7;
        }),
      "claims",
    ],
    [
      "a rec claim naming another recording than the sealed one",
      async () =>
        resign(
          (await mintCapability(keyring, { ...grant, mode: "record", recordingId: "rec-1" })).token,
          (p) => {
            p.rec = "rec-2";
          },
        ),
      "target-mismatch",
    ],
    [
      "a rec claim added to a token sealed without one",
      async () =>
        resign((await mintCapability(keyring, grant)).token, (p) => {
          p.rec = "rec-2";
        }),
      "target-mismatch",
    ],
    ["a service token presented as a capability", () => mintServiceToken(keyring, "proxy"), "wrong-type"],
    ["not a token at all", async () => "hello", "malformed"],
    ["a token in an object", async () => ({ token: "x" }), "malformed"],
  ];

  it.each(cases)("refuse %s", async (_name, make, reason) => {
    expect(await refusal(await make())).toBe(reason);
  });
});

describe("service tokens", () => {
  it("prove a proxy holding the keys, and nothing else passes as one", async () => {
    const token = await mintServiceToken(keyring, "proxy");
    await expect(verifyServiceToken(keyring, "proxy", token)).resolves.toEqual({ subject: "cubicle-proxy" });
    const capability = await mintCapability(keyring, grant);
    await expect(verifyServiceToken(keyring, "proxy", capability.token)).rejects.toMatchObject({
      reason: "wrong-type",
    });
    const stranger = new CapabilityKeyring({ current: "z".repeat(48) });
    await expect(verifyServiceToken(stranger, "proxy", token)).rejects.toMatchObject({
      reason: "unknown-key",
    });
  });

  it("keep the doctor's and the proxy's apart: neither token opens the other's routes", async () => {
    const doctor = await mintServiceToken(keyring, "doctor");
    await expect(verifyServiceToken(keyring, "doctor", doctor)).resolves.toEqual({
      subject: "cubicle-doctor",
    });
    await expect(verifyServiceToken(keyring, "proxy", doctor)).rejects.toMatchObject({
      reason: "wrong-type",
    });
    const proxy = await mintServiceToken(keyring, "proxy");
    await expect(verifyServiceToken(keyring, "doctor", proxy)).rejects.toMatchObject({
      reason: "wrong-type",
    });
  });
});
