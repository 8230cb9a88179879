import { createHmac, randomBytes, randomUUID } from "node:crypto";
import { parseProxyConfig, type RunningProxy, startProxy } from "@cubicle/proxy";
import {
  type CapabilityGrant,
  CapabilityKeyring,
  mintCapability,
  mintServiceToken,
  type RefusalReason,
  SCREEN_PROTOCOL,
} from "@cubicle/proxy/capability";
import { CompactEncrypt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tally } from "../../src/tally.ts";
import { type ScreenStack, startScreenStack, upgradeStatus } from "./support/screen-proxy.ts";

/**
 * Capability tokens as a hostile browser (or a holder of a leaked key) would shape them, presented
 * to the real proxy over real sockets, each checked against the refusal it was designed to get:
 * the bare 404 every refusal looks like from outside, and the reason the proxy counts inside.
 */
let stack: ScreenStack;

beforeAll(async () => {
  stack = await startScreenStack("hostile-tokens");
});

afterAll(async () => {
  await stack?.close();
});

type Json = Record<string, unknown>;

interface Decoded {
  header: Json;
  payload: Json;
  signature: string;
}

const encode = (part: unknown) =>
  Buffer.from(typeof part === "string" ? part : JSON.stringify(part)).toString("base64url");

function decode(token: string): Decoded {
  const [header = "", payload = "", signature = ""] = token.split(".");
  return {
    header: JSON.parse(Buffer.from(header, "base64url").toString()),
    payload: JSON.parse(Buffer.from(payload, "base64url").toString()),
    signature,
  };
}

/** A JWS over exactly these parts (objects are JSON-encoded, strings taken as they are). */
function signWith(key: Uint8Array, header: unknown, payload: unknown): string {
  const input = `${encode(header)}.${encode(payload)}`;
  return `${input}.${createHmac("sha256", key).update(input).digest("base64url")}`;
}

const keyring = () => new CapabilityKeyring({ current: stack.key });
/** The key id with each letter's case swapped: a key id is random, and may have no lowercase letter to raise. */
const swapCase = (text: string) =>
  [...text].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join("");
/** Another deployment's key: what an attacker can sign with. */
const foreign = new CapabilityKeyring({ current: randomBytes(32).toString("base64url") });

async function refusalCounts(proxy: RunningProxy = stack.proxy): Promise<Map<string, number>> {
  const text = await proxy.metrics.registry.getSingleMetricAsString("cubicle_proxy_refusals_total");
  return new Map(
    [...text.matchAll(/reason="([^"]+)"\} (\d+)/g)].map(([, reason, n]) => [reason ?? "", Number(n)]),
  );
}

/** What presenting these subprotocols got: the HTTP status, and the refusal reasons the proxy counted. */
async function present(protocols: string | undefined): Promise<{ status: number; reasons: string[] }> {
  const before = await refusalCounts();
  const status = await upgradeStatus(stack.proxy.url, protocols);
  const after = await refusalCounts();
  const reasons = [...after].flatMap(([reason, n]) => Array(n - (before.get(reason) ?? 0)).fill(reason));
  return { status, reasons };
}

/** One input and the refusal it was designed to get. */
interface Case {
  name: string;
  protocols: string | undefined;
  reason: RefusalReason;
}

/** Presents every case, one after another so each refusal is counted against its own case. */
async function sweep(context: Parameters<typeof tally>[0], cases: Case[]) {
  const counts = tally(context, "hostile: capability tokens");
  for (const { name, protocols, reason } of cases) {
    counts.tried();
    const got = await present(protocols);
    expect.soft(got, name).toEqual({ status: 404, reasons: [reason] });
    if (got.status === 404 && got.reasons.length === 1 && got.reasons[0] === reason) counts.refused();
  }
  counts.lost(await stack.stillServes());
}

const offered = (token: string) => `${SCREEN_PROTOCOL}, ${token}`;

/** An alteration of a freshly minted token, and the refusal it gets once signed again with our key. */
interface Alteration {
  name: string;
  header?(header: Json): Json;
  payload?(payload: Json, now: number): Json;
  reason: RefusalReason;
  /** The refusal while it still carries api's signature (over the unaltered parts): `signature` unless given. */
  unsigned?: RefusalReason;
}

const setHeader = (name: string, value: unknown) => (header: Json) => ({ ...header, [name]: value });
const withoutHeader = (name: string) => (header: Json) => {
  const { [name]: _, ...rest } = header;
  return rest;
};
const setClaim = (name: string, value: unknown) => (payload: Json) => ({ ...payload, [name]: value });
const withoutClaim = (name: string) => (payload: Json) => {
  const { [name]: _, ...rest } = payload;
  return rest;
};

async function alterationCases(alterations: Alteration[]): Promise<Case[]> {
  const signing = keyring().current.signing;
  const cases: Case[] = [];
  for (const alteration of alterations) {
    const token = decode(await stack.mintView());
    const now = Math.floor(Date.now() / 1000);
    const header = alteration.header?.(token.header) ?? token.header;
    const payload = alteration.payload?.(token.payload, now) ?? token.payload;
    cases.push({
      name: `${alteration.name}, under api's signature`,
      protocols: offered(`${encode(header)}.${encode(payload)}.${token.signature}`),
      reason: alteration.unsigned ?? "signature",
    });
    cases.push({
      name: `${alteration.name}, signed again with the shared key`,
      protocols: offered(signWith(signing, header, payload)),
      reason: alteration.reason,
    });
  }
  return cases;
}

describe("hostile: capability tokens", () => {
  it("refuses every header altered: algorithm, type, unknown crit, key ids shaped like paths or URLs", async (context) => {
    const kid = keyring().current.id;
    const algorithm = (value: unknown): Alteration => ({
      name: `alg ${JSON.stringify(value)}`,
      header: setHeader("alg", value),
      reason: "algorithm",
      unsigned: "algorithm",
    });
    const malformedAlgorithm = (value: unknown): Alteration => ({
      ...algorithm(value),
      reason: "malformed",
      unsigned: "malformed",
    });
    const type = (value: unknown): Alteration => ({
      name: `typ ${JSON.stringify(value)}`,
      header: setHeader("typ", value),
      reason: "wrong-type",
    });
    const keyId = (value: unknown): Alteration => ({
      name: `kid ${JSON.stringify(value).slice(0, 60)}`,
      header: setHeader("kid", value),
      reason: "unknown-key",
      unsigned: "unknown-key",
    });
    const critical = (name: string, header: (header: Json) => Json): Alteration => ({
      name: `crit ${name}`,
      header,
      reason: "malformed",
      unsigned: "malformed",
    });
    const alterations: Alteration[] = [
      ...["none", "None", "HS384", "HS512", "RS256", "ES256", "PS256", "EdDSA", "hs256", "HS256 "].map(
        algorithm,
      ),
      ...["", 256, null, ["HS256"], { alg: "HS256" }].map(malformedAlgorithm),
      { name: "no alg", header: withoutHeader("alg"), reason: "malformed", unsigned: "malformed" },
      ...[
        "JWT",
        "cubicle-service+jwt",
        "cubicle-doctor+jwt",
        "cubicle-screen",
        "",
        1,
        null,
        ["cubicle-screen+jwt"],
      ].map(type),
      { name: "no typ", header: withoutHeader("typ"), reason: "wrong-type" },
      ...[
        "../../../../etc/passwd",
        "/etc/passwd",
        "..\\..\\windows\\win.ini",
        `${kid}/../${kid}`,
        `../${kid}`,
        `./${kid}`,
        "file:///etc/passwd",
        "https://evil.example.net/.well-known/jwks.json",
        "http://127.0.0.1:1/key",
        "//evil.example.net/key",
        "data:,secret",
        `${kid}?key=1`,
        `${kid}#x`,
        `${kid}\u0000`,
        ` ${kid}`,
        swapCase(kid),
        "__proto__",
        "constructor",
        "hasOwnProperty",
        "",
        "k".repeat(4_000),
        1,
        null,
        [kid],
        { id: kid },
      ].map(keyId),
      { name: "no kid", header: withoutHeader("kid"), reason: "unknown-key", unsigned: "unknown-key" },
      critical('["cubicle-extension"], named and present', (h) => ({
        ...h,
        crit: ["cubicle-extension"],
        "cubicle-extension": true,
      })),
      critical('["cubicle-extension"], absent', setHeader("crit", ["cubicle-extension"])),
      critical('["exp"], a registered claim', setHeader("crit", ["exp"])),
      critical('["kid"], a registered header', setHeader("crit", ["kid"])),
      critical("[]", setHeader("crit", [])),
      critical('"b64", not a list', setHeader("crit", "b64")),
      critical("[1]", setHeader("crit", [1])),
      critical('[""]', setHeader("crit", [""])),
      {
        // unencoded, the payload is signed as it is, so api's signature fails first
        ...critical('["b64"] with an unencoded payload', (h) => ({ ...h, crit: ["b64"], b64: false })),
        unsigned: "signature",
      },
    ];
    await sweep(context, await alterationCases(alterations));
    // the alterations alone were refused: api's token taken apart and signed again unaltered opens a socket
    const unaltered = decode(await stack.mintView());
    expect(
      await upgradeStatus(
        stack.proxy.url,
        offered(signWith(keyring().current.signing, unaltered.header, unaltered.payload)),
      ),
    ).toBe(101);
  });

  it("refuses every claim altered: issuer, audience, subject, id, times, screen, mode, lease, sealed target", async (context) => {
    const claim = (name: string, value: unknown, reason: RefusalReason): Alteration => ({
      name: `${name} ${JSON.stringify(value)}`,
      payload: setClaim(name, value),
      reason,
    });
    const missing = (name: string, reason: RefusalReason): Alteration => ({
      name: `no ${name}`,
      payload: withoutClaim(name),
      reason,
    });
    const timed = (name: string, reason: RefusalReason, at: (payload: Json, now: number) => Json) => ({
      name,
      payload: at,
      reason,
    });
    // A target sealed for someone else: the real sealed part of another subject's capability.
    const memberToken = decode(
      (
        await stack.world.people.member.post(
          `/v1/workspaces/${stack.world.workspaceId}/computers/${stack.computer.id}/screens/0/capabilities`,
          { mode: "view" },
        )
      ).json.token,
    );
    const sealedWithForeignKey = await new CompactEncrypt(new TextEncoder().encode("{}"))
      .setProtectedHeader({ alg: "dir", enc: "A256GCM", kid: foreign.current.id })
      .encrypt(foreign.current.sealing);
    const flipped = (sealed: string) => {
      const parts = sealed.split(".");
      const ciphertext = Buffer.from(parts[3] ?? "", "base64url");
      ciphertext[0] = (ciphertext[0] ?? 0) ^ 1;
      parts[3] = ciphertext.toString("base64url");
      return parts.join(".");
    };
    const alterations: Alteration[] = [
      ...["cubicle-proxy", "cubicle-api ", "Cubicle-api", "", 1, null, ["cubicle-api"]].map((v) =>
        claim("iss", v, "issuer"),
      ),
      missing("iss", "issuer"),
      ...["cubicle-api", "cubicle-proxy-2", "", [], ["cubicle-api"], 1, null].map((v) =>
        claim("aud", v, "audience"),
      ),
      missing("aud", "audience"),
      ...[1, null, ["user:x"], { id: "x" }, ""].map((v) => claim("sub", v, "claims")),
      missing("sub", "claims"),
      ...["user:someone-else", "api_key:x"].map((v) => claim("sub", v, "target-mismatch")),
      ...[1, null, ["x"]].map((v) => claim("jti", v, "claims")),
      // the api's replay guard takes ids of 1 to 200 characters; outside that the claim is bad
      ...["", "j".repeat(201)].map((v) => claim("jti", v, "claims")),
      missing("jti", "claims"),
      timed("iat an hour ahead", "lifetime", (p, now) => ({ ...p, iat: now + 3_600 })),
      timed("iat an hour back (lives longer than 60 s)", "lifetime", (p) => ({
        ...p,
        iat: Number(p.exp) - 3_600,
      })),
      timed("exp an hour ahead", "lifetime", (p, now) => ({ ...p, exp: now + 3_600 })),
      timed("exp beyond any date", "lifetime", (p) => ({ ...p, exp: 1e308 })),
      timed("exp two minutes ago", "expired", (p, now) => ({
        ...p,
        iat: now - 150,
        nbf: now - 150,
        exp: now - 120,
      })),
      timed("exp at the epoch", "expired", (p) => ({ ...p, iat: -60, nbf: -60, exp: 0 })),
      timed("nbf an hour ahead", "not-yet-valid", (p, now) => ({ ...p, nbf: now + 3_600 })),
      ...["iat", "nbf", "exp"].flatMap((name) => [
        claim(name, String(Math.floor(Date.now() / 1000)), "claims"),
        claim(name, null, "claims"),
        missing(name, "claims"),
      ]),
      ...[stack.world.otherWorkspaceId, "ws"].map((v) => claim("ws", v, "target-mismatch")),
      ...[1, null, { id: "x" }, ""].map((v) => claim("ws", v, "claims")),
      missing("ws", "claims"),
      claim("cmp", randomUUID(), "target-mismatch"),
      ...[1, null, [randomUUID()], ""].map((v) => claim("cmp", v, "claims")),
      missing("cmp", "claims"),
      claim("scr", 1, "target-mismatch"),
      ...[-1, 8, 255, 0.5, "0", null, 1e308, -0.5, [0]].map((v) => claim("scr", v, "claims")),
      missing("scr", "claims"),
      ...["control", "admin", "VIEW", "", 1, null, ["view"]].map((v) => claim("mode", v, "claims")),
      missing("mode", "claims"),
      {
        name: "mode control with a lease",
        payload: (p) => ({ ...p, mode: "control", lease: randomUUID() }),
        reason: "target-mismatch",
      },
      ...[randomUUID(), "", 1, null].map((v) => claim("lease", v, "claims")),
      ...[1, null, { kind: "vnc", host: "127.0.0.1", port: 5900, password: "x" }].map((v) =>
        claim("tgt", v, "claims"),
      ),
      missing("tgt", "claims"),
      ...["", "a.b.c.d.e", "....", sealedWithForeignKey].map((v) => claim("tgt", v, "sealed-target")),
      {
        name: "tgt tampered",
        payload: (p) => ({ ...p, tgt: flipped(String(p.tgt)) }),
        reason: "sealed-target",
      },
      claim("tgt", memberToken.payload.tgt, "target-mismatch"),
    ];
    // Sealed consistently, as only a holder of the key could: ids no api would mint or take.
    const outOfRange = (name: string, grant: Partial<CapabilityGrant>) => async (): Promise<Case> => ({
      name,
      protocols: offered((await mintCapability(keyring(), { ...stack.viewGrant(), ...grant })).token),
      reason: "claims",
    });
    const keyHolders = [
      outOfRange("a subject of 201 characters", { subject: "u".repeat(201) }),
      outOfRange("an empty subject", { subject: "" }),
      outOfRange("a workspace id of 201 characters", { workspaceId: "w".repeat(201) }),
      outOfRange("an empty workspace id", { workspaceId: "" }),
      outOfRange("a computer id of 201 characters", { computerId: "c".repeat(201) }),
      outOfRange("a control lease id of 201 characters", {
        mode: "control",
        controlLeaseId: "l".repeat(201),
      }),
    ];
    const cases = await alterationCases(alterations);
    for (const make of keyHolders) cases.push(await make());
    await sweep(context, cases);
  });

  it("refuses tokens of the wrong shape or type, and tokens signed elsewhere", async (context) => {
    const ours = keyring();
    const token = decode(await stack.mintView());
    const resigned = (header: unknown, payload: unknown): string =>
      signWith(ours.current.signing, header, payload);
    const cases: Case[] = [
      ...["", "a", "a.b", "a.b.c.d", "..", "...", "!!!.@@@.###", " . . "].map((shape) => ({
        name: `the token ${JSON.stringify(shape)}`,
        protocols: offered(shape),
        reason: "malformed" as const,
      })),
      {
        name: "a sealed target presented as a token",
        protocols: offered(String(token.payload.tgt)),
        reason: "malformed",
      },
      ...["[]", "null", "1", '"x"', "{", "\u00ff\u00fe"].map((header) => ({
        name: `a header of ${JSON.stringify(header)}`,
        protocols: offered(resigned(header, token.payload)),
        reason: "malformed" as const,
      })),
      ...["[]", "null", "1", '"x"', "{", "\u00ff\u00fe"].map((payload) => ({
        name: `claims of ${JSON.stringify(payload)}`,
        protocols: offered(resigned(token.header, payload)),
        reason: "malformed" as const,
      })),
      {
        name: "a proxy service token",
        protocols: offered(await mintServiceToken(ours, "proxy")),
        reason: "wrong-type",
      },
      {
        name: "a doctor service token",
        protocols: offered(await mintServiceToken(ours, "doctor")),
        reason: "wrong-type",
      },
      {
        name: "a capability of another deployment",
        protocols: offered((await mintCapability(foreign, stack.viewGrant())).token),
        reason: "unknown-key",
      },
      {
        name: "our key id over another key's signature",
        protocols: offered(signWith(foreign.current.signing, token.header, token.payload)),
        reason: "signature",
      },
      {
        name: "another key embedded (jwk) and named by URL (jku, x5u)",
        protocols: offered(
          signWith(
            foreign.current.signing,
            {
              ...token.header,
              jwk: { kty: "oct", k: Buffer.from(foreign.current.signing).toString("base64url") },
              jku: "https://evil.example.net/jwks.json",
              x5u: "https://evil.example.net/cert.pem",
            },
            token.payload,
          ),
        ),
        reason: "signature",
      },
      {
        name: "an unsigned token (alg none, empty signature)",
        protocols: offered(`${encode({ ...token.header, alg: "none" })}.${encode(token.payload)}.`),
        reason: "algorithm",
      },
      {
        name: "api's token with its signature cut off",
        protocols: offered(`${encode(token.header)}.${encode(token.payload)}.`),
        reason: "signature",
      },
    ];
    await sweep(context, cases);
  });

  it("refuses oversized tokens and a subprotocol header of any other shape", async (context) => {
    const ours = keyring();
    const token = decode(await stack.mintView());
    const padded = (length: number) => {
      const base = signWith(ours.current.signing, token.header, { ...token.payload, pad: "" });
      return signWith(ours.current.signing, token.header, {
        ...token.payload,
        pad: "p".repeat(Math.ceil(((length - base.length) * 3) / 4)),
      });
    };
    const valid = await stack.mintView();
    const cases: Case[] = [
      ...[8_200, 14_000].map((length) => {
        const oversized = padded(length);
        return {
          name: `a token of ${oversized.length} characters`,
          protocols: offered(oversized),
          reason: "malformed" as const,
        };
      }),
      {
        name: "claims nested 3,000 deep",
        protocols: offered(
          signWith(ours.current.signing, token.header, `${"[".repeat(3_000)}${"]".repeat(3_000)}`),
        ),
        reason: "malformed",
      },
      { name: "no subprotocol header", protocols: undefined, reason: "malformed" },
      { name: "an empty subprotocol header", protocols: "", reason: "malformed" },
      { name: "our protocol alone", protocols: SCREEN_PROTOCOL, reason: "malformed" },
      { name: "a valid token alone", protocols: valid, reason: "malformed" },
      {
        name: "our protocol twice",
        protocols: `${SCREEN_PROTOCOL}, ${SCREEN_PROTOCOL}`,
        reason: "malformed",
      },
      {
        name: "another version of our protocol",
        protocols: `cubicle.screen.v2, ${valid}`,
        reason: "malformed",
      },
      {
        name: "a valid token and a third value",
        protocols: `${SCREEN_PROTOCOL}, ${valid}, x`,
        reason: "malformed",
      },
      {
        name: "a valid token offered twice",
        protocols: `${SCREEN_PROTOCOL}, ${valid}, ${valid}`,
        reason: "malformed",
      },
      {
        name: "a valid token split by a comma",
        protocols: `${SCREEN_PROTOCOL}, ${valid.slice(0, 40)},${valid.slice(40)}`,
        reason: "malformed",
      },
      {
        name: "a valid token with a space inside",
        protocols: `${SCREEN_PROTOCOL}, ${valid.slice(0, 40)} ${valid.slice(40)}`,
        reason: "signature",
      },
    ];
    await sweep(context, cases);
    // the token was refused for the shapes it came in: offered as designed, it opens a socket
    expect(await upgradeStatus(stack.proxy.url, offered(valid))).toBe(101);

    // Past Node's 16 KiB of request headers the request is refused before the proxy reads it.
    const counts = tally(context, "hostile: capability tokens");
    counts.tried();
    const before = await refusalCounts();
    expect(await upgradeStatus(stack.proxy.url, offered(padded(20_000)))).toBe(431);
    expect(await refusalCounts()).toEqual(before);
    counts.refused();
    counts.lost(await stack.stillServes());
  });

  describe("one token presented from many sockets at once", () => {
    let replica: RunningProxy;

    beforeAll(async () => {
      replica = await startProxy(
        parseProxyConfig({
          SCREEN_CAPABILITY_KEY: stack.key,
          PROXY_PORT: "0",
          CUBICLE_API_URL: stack.t.api.url,
          LOG_LEVEL: "silent",
        }),
      );
    });

    afterAll(async () => {
      await replica?.close();
    });

    it("admits exactly one socket, on either of two replicas, and refuses the rest as replayed", async (context) => {
      const counts = tally(context, "hostile: capability tokens");
      const replayed = async () =>
        ((await refusalCounts(stack.proxy)).get("replayed") ?? 0) +
        ((await refusalCounts(replica)).get("replayed") ?? 0);
      const ROUNDS = 5;
      const SOCKETS = 24;
      for (let round = 0; round < ROUNDS; round++) {
        const token = offered(await stack.mintView());
        const replayedBefore = await replayed();
        const statuses = await Promise.all(
          Array.from({ length: SOCKETS }, (_, i) =>
            upgradeStatus(i % 2 ? replica.url : stack.proxy.url, token),
          ),
        );
        counts.tried(SOCKETS);
        const admitted = statuses.filter((status) => status === 101).length;
        const refused = statuses.filter((status) => status === 404).length;
        const replayedNow = (await replayed()) - replayedBefore;
        expect({ admitted, refused, replayed: replayedNow }, `round ${round}`).toEqual({
          admitted: 1,
          refused: SOCKETS - 1,
          replayed: SOCKETS - 1,
        });
        counts.refused(Math.min(refused, replayedNow));
      }
      counts.lost(await stack.stillServes());
    });
  });
});
