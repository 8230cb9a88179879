import { randomBytes } from "node:crypto";
import type { Computer } from "@cubicle/db";
import { CapabilityKeyring, mintServiceToken, verifyCapability } from "@cubicle/proxy/capability";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createComputer } from "../testing/computers.ts";
import { expectStatus, startTestApi, type TestApi } from "../testing/harness.ts";
import { problem } from "../testing/sessions.ts";
import { EventStreamReader } from "../testing/sse.ts";
import { buildWorld, type World } from "../testing/world.ts";

const KEY = randomBytes(32).toString("base64url");
const keyring = new CapabilityKeyring({ current: KEY });
const acceptAll = { replay: { claim: async () => true } };

let t: TestApi;
let w: World;
let computer: Computer;
let memberKey: string;

beforeAll(async () => {
  t = await startTestApi({ SCREEN_CAPABILITY_KEY: KEY });
  w = await buildWorld(t, "embedding");
  computer = await createComputer(t, w.workspaceId);
  memberKey = expectStatus(
    await w.people.owner.post(`/v1/workspaces/${w.workspaceId}/api-keys`, {
      name: "embedder",
      role: "member",
    }),
    201,
  ).json.key as string;
});
afterAll(() => t?.close());

const originsPath = (workspaceId = w.workspaceId) => `/v1/workspaces/${workspaceId}/embed-origins`;
const mintPath = () => `/v1/workspaces/${w.workspaceId}/computers/${computer.id}/screens/0/capabilities`;

describe("embed origins", () => {
  it("are none until an admin lists some; members read them, only admins (people) change them, audited", async () => {
    expect(expectStatus(await w.people.viewer.get(originsPath()), 200).json).toEqual({ origins: [] });
    const set = expectStatus(
      await w.people.admin.put(originsPath(), {
        origins: ["https://tools.example.com/", "http://127.0.0.1:4100", "https://tools.example.com"],
      }),
      200,
    ).json;
    // a browser's Origin has no trailing slash and names a site once
    expect(set).toEqual({ origins: ["https://tools.example.com", "http://127.0.0.1:4100"] });
    expect(expectStatus(await w.people.member.get(originsPath()), 200).json).toEqual(set);

    problem(await w.people.member.put(originsPath(), { origins: [] }), 403, "ROLE_FORBIDDEN");
    problem(
      await t.client().put(originsPath(), { origins: [] }, { apiKey: memberKey }),
      403,
      "PERSON_REQUIRED",
    );
    problem(await w.people.outsider.get(originsPath()), 404, "WORKSPACE_NOT_FOUND");
    problem(await w.people.admin.get(originsPath(w.otherWorkspaceId)), 404, "WORKSPACE_NOT_FOUND");

    const [row] = await t.database.db
      .selectFrom("audit_events")
      .selectAll()
      .where("action", "=", "workspace.embed_origins_changed")
      .where("workspace_id", "=", w.workspaceId)
      .execute();
    expect(row).toMatchObject({ actor_id: w.people.admin.userId, data: { before: [], after: set.origins } });
  });

  it("refuse anything but bare http(s) origins, naming the bad one, and keep the list as it was", async () => {
    const before = expectStatus(await w.people.admin.get(originsPath()), 200).json;
    for (const bad of [
      "tools.example.com",
      "https://tools.example.com/app",
      "https://*.example.com",
      "https://user:pw@tools.example.com",
      "javascript:alert(1)",
      "https://tools.example.com?x=1",
    ]) {
      const refused = problem(
        await w.people.admin.put(originsPath(), { origins: [bad] }),
        400,
        "VALIDATION_FAILED",
      );
      expect(refused.errors?.map((error) => error.message).join("\n")).toContain(bad);
    }
    const tooMany = Array.from({ length: 21 }, (_, i) => `https://t${i}.example.com`);
    problem(await w.people.admin.put(originsPath(), { origins: tooMany }), 400, "VALIDATION_FAILED");
    problem(await w.people.admin.put(originsPath(), {}), 400, "VALIDATION_FAILED");
    expect(expectStatus(await w.people.admin.get(originsPath()), 200).json).toEqual(before);
  });

  it("are told to the dashboard's embed page without credentials; an unknown workspace lists none", async () => {
    const policy = async (workspaceId: string) => {
      const response = await fetch(`${t.api.url}/embed/frame-policy/${encodeURIComponent(workspaceId)}`);
      expect(response.status).toBe(200);
      expect(response.headers.get("cache-control")).toBe("no-store");
      return response.json();
    };
    expect(await policy(w.workspaceId)).toEqual(
      expectStatus(await w.people.admin.get(originsPath()), 200).json,
    );
    expect(await policy("no-such-workspace")).toEqual({ origins: [] });
    expect(await policy(w.otherWorkspaceId)).toEqual({ origins: [] });
  });
});

describe("a capability bound to an origin", () => {
  it("is minted only for a listed origin, and carries it sealed with its claims", async () => {
    expectStatus(await w.people.admin.put(originsPath(), { origins: ["http://127.0.0.1:4100"] }), 200);
    const key = { apiKey: memberKey };
    const refused = problem(
      await t.client().post(mintPath(), { mode: "view", origin: "https://elsewhere.example.net" }, key),
      422,
      "ORIGIN_NOT_LISTED",
    );
    expect(refused.detail).toContain("https://elsewhere.example.net");
    problem(
      await t.client().post(mintPath(), { mode: "view", origin: "not an origin" }, key),
      400,
      "VALIDATION_FAILED",
    );

    const minted = expectStatus(
      await t.client().post(mintPath(), { mode: "view", origin: "http://127.0.0.1:4100/" }, key),
      201,
    ).json;
    const verified = await verifyCapability(keyring, minted.token, acceptAll);
    expect(verified).toMatchObject({ mode: "view", origin: "http://127.0.0.1:4100" });
    const [audited] = await t.database.db
      .selectFrom("audit_events")
      .selectAll()
      .where("action", "=", "screen.capability_minted")
      .where("workspace_id", "=", w.workspaceId)
      .orderBy("id", "desc")
      .limit(1)
      .execute();
    expect(audited?.data).toMatchObject({ jti: verified.jti, origin: "http://127.0.0.1:4100" });
  });
});

describe("the proxy's access check", () => {
  it("names the workspace's embed origins, and a change to them is announced as an access change", async () => {
    const authorization = `Bearer ${await mintServiceToken(keyring, "proxy")}`;
    const following = new AbortController();
    const stream = await fetch(`${t.api.url}/internal/proxy/access-changes`, {
      headers: { authorization, accept: "text/event-stream" },
      signal: following.signal,
    });
    if (!stream.body) throw new Error("no body");
    const events = new EventStreamReader(stream.body);
    expect(await events.next("ready")).toEqual({});
    const ask = async () => {
      const response = await fetch(`${t.api.url}/internal/proxy/access`, {
        method: "POST",
        headers: { authorization, "content-type": "application/json" },
        body: JSON.stringify({
          grants: [{ subject: `user:${w.people.member.userId}`, workspaceId: w.workspaceId }],
        }),
      });
      return ((await response.json()) as { grants: Array<{ origins: string[] }> }).grants[0]?.origins;
    };
    expectStatus(await w.people.admin.put(originsPath(), { origins: ["https://a.example.com"] }), 200);
    await events.next("changed");
    expect(await ask()).toEqual(["https://a.example.com"]);
    expectStatus(await w.people.admin.put(originsPath(), { origins: [] }), 200);
    expect(await events.next("changed")).toEqual({ workspaceId: w.workspaceId });
    expect(await ask()).toEqual([]);
    following.abort();
  });
});
