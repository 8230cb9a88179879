import { randomBytes } from "node:crypto";
import {
  EGRESS_LEVELS,
  type EgressPolicy,
  MAX_EGRESS_DESTINATIONS,
  ProviderError,
  type SandboxProvider,
} from "@cubicle/providers/contract";
import { fakeEgress } from "@cubicle/providers/testing";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { machineRefOf } from "../src/computers/repository.ts";
import { expectStatus, type RawResponse, startTestApi, type TestApi } from "../testing/harness.ts";
import { until } from "../testing/until.ts";
import { buildWorld, type World } from "../testing/world.ts";

const METRICS_TOKEN = randomBytes(32).toString("base64url");
/** Short enough that a test sees a window end, long enough that one round's refusals share it. */
const AUDIT_WINDOW_MS = 1_500;
const charter = { purpose: "tests egress", boundary: "stays in the test", privacyReason: "its own network" };

let t: TestApi;
let w: World;
let seq = 0;

beforeAll(async () => {
  t = await startTestApi({
    METRICS_TOKEN,
    SANDBOX_EGRESS_POLL_MS: "100",
    SANDBOX_EGRESS_AUDIT_WINDOW_MS: String(AUDIT_WINDOW_MS),
  });
  w = await buildWorld(t, "egress");
});
afterAll(() => t?.close());

const db = () => t.database.db;
const provider = (): Promise<SandboxProvider> => t.api.deps.sandbox.current();
const workspacePath = (workspaceId = w.workspaceId) => `/v1/workspaces/${workspaceId}/egress-policy`;
const computerPath = (computerId: string, rest = "/egress-policy", workspaceId = w.workspaceId) =>
  `/v1/workspaces/${workspaceId}/computers/${computerId}${rest}`;
const admin = () => w.people.admin;

function problem(response: RawResponse, status: number, code: string) {
  expect(response.status, response.text.slice(0, 300)).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/problem+json");
  expect(response.json).toMatchObject({ status, code });
  return response.json;
}

/** A Private bot's computer of its own, started when asked. */
async function newComputer(options: { running: boolean; workspaceId?: string } = { running: true }) {
  const caller = options.workspaceId ? w.people.outsider : admin();
  const workspaceId = options.workspaceId ?? w.workspaceId;
  const bot = expectStatus(
    await caller.post(`/v1/workspaces/${workspaceId}/bots`, {
      name: `Egress ${++seq}`,
      charter,
      computerMode: "private",
    }),
    201,
  ).json as { computerId: string };
  if (options.running)
    expectStatus(await caller.post(computerPath(bot.computerId, "/start", workspaceId)), 200);
  return bot.computerId;
}

const rowOf = (id: string) =>
  db().selectFrom("computers").selectAll().where("id", "=", id).executeTakeFirstOrThrow();

/** The policy the fake machine of the computer holds now (null: none applied). */
async function applied(computerId: string): Promise<EgressPolicy | null> {
  const p = await provider();
  const ref = machineRefOf(await rowOf(computerId), p);
  return ref.providerRef === null ? null : fakeEgress(p).policyOf(ref.providerRef);
}

const audits = (action: string, targetId: string) =>
  db()
    .selectFrom("audit_events")
    .selectAll()
    .where("action", "=", action)
    .where("target_id", "=", targetId)
    .orderBy("id")
    .execute();

const OFFLINE: EgressPolicy = { level: "offline", allow: [] };
const ALLOW_ONE: EgressPolicy = { level: "allowlist", allow: [{ host: "api.example.com", ports: [443] }] };

describe("the workspace's egress policy", () => {
  it("is default until set, and any member reads it with the levels the provider enforces", async () => {
    const fresh = expectStatus(
      await w.people.owner.post("/v1/workspaces", { name: "Fresh egress" }),
      201,
    ).json;
    const got = expectStatus(await w.people.owner.get(workspacePath(fresh.id)), 200).json;
    expect(got).toEqual({
      level: "default",
      allow: [],
      enforceableLevels: [...EGRESS_LEVELS],
      allowlistLimits: { ports: true, maxDestinations: MAX_EGRESS_DESTINATIONS },
    });
    expect(expectStatus(await w.people.viewer.get(workspacePath()), 200).json.level).toBeDefined();
    problem(await w.people.outsider.get(workspacePath()), 404, "WORKSPACE_NOT_FOUND");
  });

  it("is set by an admin, audited with before and after, and applied at once to running computers that inherit it", async () => {
    expectStatus(await admin().put(workspacePath(), { level: "default" }), 200);
    const inheriting = await newComputer();
    const ownPolicy = await newComputer();
    expectStatus(await admin().put(computerPath(ownPolicy), OFFLINE), 200);
    const stopped = await newComputer();
    expectStatus(await w.people.owner.post(computerPath(stopped, "/stop")), 200);
    const beforeStopped = await applied(stopped);

    const set = expectStatus(await admin().put(workspacePath(), ALLOW_ONE), 200).json;
    expect(set).toMatchObject(ALLOW_ONE);
    expect(expectStatus(await w.people.member.get(workspacePath()), 200).json).toMatchObject(ALLOW_ONE);
    expect(await applied(inheriting)).toEqual(ALLOW_ONE);
    expect(await applied(ownPolicy), "a computer with its own policy keeps it").toEqual(OFFLINE);
    expect(await applied(stopped), "a stopped computer gets it when it starts").toEqual(beforeStopped);

    const [entry] = (await audits("workspace.egress_changed", w.workspaceId)).slice(-1);
    expect(entry).toMatchObject({
      actor_type: "user",
      actor_id: admin().userId,
      workspace_id: w.workspaceId,
      target_type: "workspace",
      data: { before: { level: "default", allow: [] }, after: ALLOW_ONE },
    });

    expectStatus(await w.people.owner.post(computerPath(stopped, "/start")), 200);
    expect(await applied(stopped), "applied when it starts again").toEqual(ALLOW_ONE);
    const view = expectStatus(await w.people.viewer.get(computerPath(inheriting, "")), 200).json;
    expect(view.egress).toEqual({ ...ALLOW_ONE, inherited: true });
  });

  it("is refused to members, viewers and API keys, and changes nothing", async () => {
    const before = expectStatus(await admin().get(workspacePath()), 200).json;
    problem(await w.people.member.put(workspacePath(), OFFLINE), 403, "ROLE_FORBIDDEN");
    problem(await w.people.viewer.put(workspacePath(), OFFLINE), 403, "ROLE_FORBIDDEN");
    const key = expectStatus(
      await w.people.owner.post(`/v1/workspaces/${w.workspaceId}/api-keys`, {
        name: "egress",
        role: "admin",
      }),
      201,
    ).json.key;
    problem(await t.client().put(workspacePath(), OFFLINE, { apiKey: key }), 403, "PERSON_REQUIRED");
    expect(expectStatus(await admin().get(workspacePath()), 200).json).toEqual(before);
  });

  it("keeps the previous policy everywhere when a running computer fails to take the new one", async () => {
    expectStatus(await admin().put(workspacePath(), { level: "default" }), 200);
    const first = await newComputer();
    const second = await newComputer();
    const p = await provider();
    const failing = machineRefOf(await rowOf(second), p).providerRef;
    const original = p.setEgress.bind(p);
    const setEgress = vi.spyOn(p, "setEgress").mockImplementation(async (ref, policy) => {
      if (ref.providerRef === failing) throw new ProviderError("PROVIDER_FAILURE", "the firewall said no");
      return original(ref, policy);
    });
    const audited = (await audits("workspace.egress_changed", w.workspaceId)).length;
    try {
      problem(await admin().put(workspacePath(), OFFLINE), 502, "PROVIDER_FAILURE");
    } finally {
      setEgress.mockRestore();
    }
    expect(expectStatus(await admin().get(workspacePath()), 200).json.level).toBe("default");
    expect(await applied(first)).toEqual({ level: "default", allow: [] });
    expect(await applied(second)).toEqual({ level: "default", allow: [] });
    expect(await audits("workspace.egress_changed", w.workspaceId)).toHaveLength(audited);
  });
});

describe("a computer's egress policy", () => {
  it("shows the inherited policy, whether it is enforced, the levels the provider enforces and the refusals", async () => {
    expectStatus(await admin().put(workspacePath(), { level: "default" }), 200);
    const id = await newComputer();
    expect(expectStatus(await w.people.viewer.get(computerPath(id)), 200).json).toEqual({
      level: "default",
      allow: [],
      inherited: true,
      enforced: true,
      unenforcedReason: null,
      enforceableLevels: [...EGRESS_LEVELS],
      allowlistLimits: { ports: true, maxDestinations: MAX_EGRESS_DESTINATIONS },
      refusedTotal: 0,
    });
  });

  it("is overridden by an admin, applied to the running machine before the answer, and audited", async () => {
    const id = await newComputer();
    const set = expectStatus(await admin().put(computerPath(id), ALLOW_ONE), 200).json;
    expect(set).toMatchObject({ ...ALLOW_ONE, inherited: false, enforced: true });
    expect(await applied(id)).toEqual(ALLOW_ONE);
    expect(await rowOf(id)).toMatchObject({ egress_level: "allowlist", egress_allow: ALLOW_ONE.allow });
    expect(expectStatus(await w.people.member.get(computerPath(id, "")), 200).json.egress).toEqual({
      ...ALLOW_ONE,
      inherited: false,
    });
    expect(await audits("computer.egress_changed", id)).toEqual([
      expect.objectContaining({
        actor_id: admin().userId,
        workspace_id: w.workspaceId,
        data: {
          before: { level: "default", allow: [], inherited: true },
          after: { ...ALLOW_ONE, inherited: false },
        },
      }),
    ]);

    // a stopped computer's machine takes it too, and keeps it for its next start
    expectStatus(await w.people.owner.post(computerPath(id, "/stop")), 200);
    expectStatus(await w.people.owner.put(computerPath(id), OFFLINE), 200);
    expect(await applied(id)).toEqual(OFFLINE);
  });

  it("returns to the workspace's policy when its own is deleted, applied at once", async () => {
    expectStatus(await admin().put(workspacePath(), ALLOW_ONE), 200);
    const id = await newComputer();
    expectStatus(await admin().put(computerPath(id), OFFLINE), 200);
    const back = expectStatus(await admin().delete(computerPath(id)), 200).json;
    expect(back).toMatchObject({ ...ALLOW_ONE, inherited: true, enforced: true });
    expect(await applied(id)).toEqual(ALLOW_ONE);
    expect(await rowOf(id)).toMatchObject({ egress_level: null, egress_allow: null });
    const [, cleared] = await audits("computer.egress_changed", id);
    expect(cleared?.data).toEqual({
      before: { ...OFFLINE, inherited: false },
      after: { ...ALLOW_ONE, inherited: true },
    });
    expectStatus(await admin().put(workspacePath(), { level: "default" }), 200);
  });

  it("is applied when a computer starts, before it is reported running", async () => {
    const id = await newComputer({ running: false });
    expectStatus(await admin().put(computerPath(id), OFFLINE), 200);
    expect(await applied(id), "no machine yet").toBeNull();
    const p = await provider();
    const setEgress = vi.spyOn(p, "setEgress");
    const provision = vi.spyOn(p, "provision");
    try {
      expect(expectStatus(await w.people.member.post(computerPath(id, "/start")), 200).json.state).toBe(
        "running",
      );
      expect(await applied(id)).toEqual(OFFLINE);
      expect(setEgress.mock.invocationCallOrder[0]).toBeGreaterThan(
        provision.mock.invocationCallOrder[0] ?? 0,
      );
    } finally {
      setEgress.mockRestore();
      provision.mockRestore();
    }
  });

  it("fails a start whose machine does not take its policy: no computer runs without it", async () => {
    const id = await newComputer({ running: false });
    const p = await provider();
    const setEgress = vi
      .spyOn(p, "setEgress")
      .mockRejectedValueOnce(new ProviderError("PROVIDER_FAILURE", "the firewall said no"));
    try {
      problem(await w.people.member.post(computerPath(id, "/start")), 502, "PROVIDER_FAILURE");
    } finally {
      setEgress.mockRestore();
    }
    expect((await rowOf(id)).state).toBe("error");
  });

  it("keeps the previous policy when the provider fails to apply the new one", async () => {
    const id = await newComputer();
    expectStatus(await admin().put(computerPath(id), ALLOW_ONE), 200);
    const p = await provider();
    const setEgress = vi
      .spyOn(p, "setEgress")
      .mockRejectedValueOnce(new ProviderError("PROVIDER_FAILURE", "the firewall said no"));
    try {
      problem(await admin().put(computerPath(id), OFFLINE), 502, "PROVIDER_FAILURE");
    } finally {
      setEgress.mockRestore();
    }
    expect(await rowOf(id)).toMatchObject({ egress_level: "allowlist" });
    expect(await applied(id)).toEqual(ALLOW_ONE);
    expect(await audits("computer.egress_changed", id)).toHaveLength(1);
  });

  it("is changed by admins and owners only, and read by every member", async () => {
    const id = await newComputer({ running: false });
    for (const person of [w.people.member, w.people.viewer])
      problem(await person.put(computerPath(id), OFFLINE), 403, "ROLE_FORBIDDEN");
    problem(await w.people.member.delete(computerPath(id)), 403, "ROLE_FORBIDDEN");
    expect((await rowOf(id)).egress_level).toBeNull();
    expectStatus(await w.people.owner.put(computerPath(id), OFFLINE), 200);
    expectStatus(await w.people.viewer.get(computerPath(id)), 200);
    expect(await audits("computer.egress_changed", id)).toHaveLength(1);
  });

  it("answers 404 for a computer of another workspace", async () => {
    const theirs = await newComputer({ running: false, workspaceId: w.otherWorkspaceId });
    for (const response of [
      await admin().get(computerPath(theirs)),
      await admin().put(computerPath(theirs), OFFLINE),
      await admin().delete(computerPath(theirs)),
      await w.people.outsider.put(computerPath(theirs, "/egress-policy", w.workspaceId), OFFLINE),
    ])
      expect(response.status).toBe(404);
    problem(await admin().get(computerPath(theirs)), 404, "COMPUTER_NOT_FOUND");
    expect((await rowOf(theirs)).egress_level).toBeNull();
  });
});

describe("validation", () => {
  const invalid: [string, unknown, string][] = [
    ["an unknown level", { level: "closed" }, "json.level"],
    [
      "destinations with a level other than allowlist",
      { level: "default", allow: ALLOW_ONE.allow },
      "json.allow",
    ],
    ["an empty allowlist", { level: "allowlist", allow: [] }, "json.allow"],
    ["an allowlist without destinations", { level: "allowlist" }, "json.allow"],
    [
      "a host that is not a name",
      { level: "allowlist", allow: [{ host: "not a host" }] },
      "json.allow.0.host",
    ],
    ["a mistyped address", { level: "allowlist", allow: [{ host: "10.0.0" }] }, "json.allow.0.host"],
    ["a CIDR prefix too long", { level: "allowlist", allow: [{ host: "10.0.0.0/33" }] }, "json.allow.0.host"],
    ["an IPv6 prefix too long", { level: "allowlist", allow: [{ host: "fd00::/129" }] }, "json.allow.0.host"],
    ["port 0", { level: "allowlist", allow: [{ host: "example.com", ports: [0] }] }, "json.allow.0.ports.0"],
    [
      "a port past 65535",
      { level: "allowlist", allow: [{ host: "example.com", ports: [65_536] }] },
      "json.allow.0.ports.0",
    ],
    [
      "a fractional port",
      { level: "allowlist", allow: [{ host: "example.com", ports: [80.5] }] },
      "json.allow.0.ports.0",
    ],
    [
      "a port twice",
      { level: "allowlist", allow: [{ host: "example.com", ports: [80, 80] }] },
      "json.allow.0.ports",
    ],
    [
      `more than ${MAX_EGRESS_DESTINATIONS} destinations`,
      {
        level: "allowlist",
        allow: Array.from({ length: MAX_EGRESS_DESTINATIONS + 1 }, (_, i) => ({ host: `h${i}.example.com` })),
      },
      "json.allow",
    ],
  ];

  it.each(invalid)("refuses %s as a problem naming the field, on both routes", async (_, body, path) => {
    const id = await newComputer({ running: false });
    const before = (await audits("workspace.egress_changed", w.workspaceId)).length;
    for (const route of [workspacePath(), computerPath(id)]) {
      const refused = problem(await admin().put(route, body), 400, "VALIDATION_FAILED");
      expect(refused.errors.map((e: { path: string }) => e.path)).toContain(path);
    }
    expect((await rowOf(id)).egress_level).toBeNull();
    expect(await audits("workspace.egress_changed", w.workspaceId)).toHaveLength(before);
  });

  it("takes names, addresses and CIDR blocks of both families, ports optional", async () => {
    const id = await newComputer({ running: false });
    const allow = [
      { host: "API.Example.com", ports: [443, 8443] },
      { host: "203.0.113.9", ports: [] },
      { host: "198.51.100.0/24", ports: [53] },
      { host: "2001:db8::1" },
      { host: "2001:db8::/32", ports: [80] },
    ];
    const set = expectStatus(await admin().put(computerPath(id), { level: "allowlist", allow }), 200).json;
    expect(set.allow).toEqual([
      { host: "api.example.com", ports: [443, 8443] },
      { host: "203.0.113.9", ports: [] },
      { host: "198.51.100.0/24", ports: [53] },
      { host: "2001:db8::1", ports: [] },
      { host: "2001:db8::/32", ports: [80] },
    ]);
  });

  it("refuses a level the provider cannot enforce with 422 EGRESS_UNSUPPORTED, naming those it can", async () => {
    const id = await newComputer();
    expectStatus(await admin().put(computerPath(id), OFFLINE), 200);
    const egress = fakeEgress(await provider());
    egress.levels = ["open", "default"];
    try {
      const refusal = problem(await admin().put(computerPath(id), ALLOW_ONE), 422, "EGRESS_UNSUPPORTED");
      expect(refusal.detail).toContain("open, default");
      problem(await admin().put(workspacePath(), OFFLINE), 422, "EGRESS_UNSUPPORTED");
      // a policy set while the provider enforced it is shown as it stands: not enforced, and why
      expect(expectStatus(await admin().get(computerPath(id)), 200).json).toMatchObject({
        level: "offline",
        enforced: false,
        unenforcedReason:
          "The fake provider cannot enforce the offline egress level; it enforces open, default.",
        enforceableLevels: ["open", "default"],
        allowlistLimits: null,
      });
      expect(expectStatus(await admin().get(workspacePath()), 200).json.enforceableLevels).toEqual([
        "open",
        "default",
      ]);
    } finally {
      egress.levels = EGRESS_LEVELS;
    }
    expect(await applied(id)).toEqual(OFFLINE);
  });

  it("refuses an allowlist beyond the provider's rules (ports, destinations) with 422 EGRESS_UNSUPPORTED, saying what to change", async () => {
    const id = await newComputer();
    expectStatus(await admin().put(computerPath(id), OFFLINE), 200);
    const egress = fakeEgress(await provider());
    egress.allowlist = { ports: false, maxDestinations: 2 };
    try {
      const ported = problem(await admin().put(computerPath(id), ALLOW_ONE), 422, "EGRESS_UNSUPPORTED");
      expect(ported.detail).toBe(
        "The fake provider cannot narrow an allowlist destination to ports: list api.example.com without ports (each destination then allows every port).",
      );
      const three = ["a.example.com", "b.example.com", "c.example.com"].map((host) => ({ host, ports: [] }));
      const many = problem(
        await admin().put(workspacePath(), { level: "allowlist", allow: three }),
        422,
        "EGRESS_UNSUPPORTED",
      );
      expect(many.detail).toContain("at most 2 allowlist destinations; this policy lists 3");
      const portless = { level: "allowlist" as const, allow: three.slice(0, 2) };
      expect(expectStatus(await admin().put(computerPath(id), portless), 200).json).toMatchObject({
        ...portless,
        enforced: true,
        allowlistLimits: { ports: false, maxDestinations: 2 },
      });
      expect(await applied(id)).toEqual(portless);
    } finally {
      egress.allowlist = { ports: true, maxDestinations: MAX_EGRESS_DESTINATIONS };
    }
  });
});

describe("refused connections", () => {
  it("are counted per computer and audited at most once per destination per window, with what was folded in", async () => {
    const id = await newComputer();
    const p = await provider();
    const providerRef = machineRefOf(await rowOf(id), p).providerRef ?? "";
    const egress = fakeEgress(p);
    const web = { address: "203.0.113.5", port: 443, protocol: "tcp" };
    const dns = { address: "198.51.100.7", port: 53, protocol: "udp" };
    for (const refusal of [web, web, dns, web]) egress.refuse(providerRef, refusal);

    const entries = () => audits("computer.egress_refused", id);
    const first = await until("an entry per destination", async () => {
      const rows = await entries();
      return rows.length >= 2 ? rows : undefined;
    });
    expect(first.map((e) => e.data)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ destination: web, count: 1 }),
        expect.objectContaining({ destination: dns, count: 1 }),
      ]),
    );
    expect(first[0]).toMatchObject({
      actor_type: "system",
      workspace_id: w.workspaceId,
      target_type: "computer",
    });

    // the two further refusals of `web` were folded: they come in one entry once the window ends
    const all = await until("the folded refusals' entry", async () => {
      const rows = await entries();
      return rows.length >= 3 ? rows : undefined;
    });
    await new Promise((resolve) => setTimeout(resolve, AUDIT_WINDOW_MS));
    expect((await entries()).map((e) => e.data)).toEqual([
      ...first.map((e) => e.data),
      expect.objectContaining({ destination: web, count: 2 }),
    ]);
    expect(all).toHaveLength(3);

    expect(expectStatus(await w.people.viewer.get(computerPath(id)), 200).json.refusedTotal).toBe(4);
    const metrics = expectStatus(
      await t.client().get("/metrics", { headers: { authorization: `Bearer ${METRICS_TOKEN}` } }),
      200,
    ).text;
    expect(metrics).toContain(
      `cubicle_computer_egress_refused_total{workspace="${w.workspaceId}",computer="${id}"} 4`,
    );

    // read once: later rounds neither count nor audit the same refusals again
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(expectStatus(await w.people.viewer.get(computerPath(id)), 200).json.refusedTotal).toBe(4);
    expect(await entries()).toHaveLength(3);
  });
});
