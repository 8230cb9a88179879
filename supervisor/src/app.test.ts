import { COMPUTER_ID_HEADER, WORKSPACE_ID_HEADER } from "@cubicle/providers/supervisor-wire";
import { describe, expect, it } from "vitest";
import { createApp } from "./app.ts";
import { stubManager } from "./testing/stub-manager.ts";

const TOKEN = "s".repeat(40);
const IDENTITY = { [COMPUTER_ID_HEADER]: "computer-1", [WORKSPACE_ID_HEADER]: "workspace-1" };

function setup() {
  const manager = stubManager();
  const errors: unknown[] = [];
  const app = createApp({ token: TOKEN, manager, logError: (error) => errors.push(error) });
  const request = (path: string, init: RequestInit & { token?: string | null; identity?: boolean } = {}) => {
    const headers = new Headers(init.headers);
    if (init.token !== null) headers.set("authorization", `Bearer ${init.token ?? TOKEN}`);
    if (init.identity !== false)
      for (const [name, value] of Object.entries(IDENTITY)) headers.set(name, value);
    return app.request(path, { ...init, headers });
  };
  return { manager, errors, request };
}

const json = (body: unknown) => ({
  body: JSON.stringify(body),
  headers: { "content-type": "application/json" },
});

describe("authentication", () => {
  it("serves /health without a token", async () => {
    const { request } = setup();
    const response = await request("/health", { token: null });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ ok: true, image: { id: "sha256:stub" } });
  });

  it.each([
    ["no token", null],
    ["a wrong token", "x".repeat(40)],
    ["a token of another length", "short"],
    ["the token's prefix", TOKEN.slice(0, 39)],
  ])("answers 401 problem JSON to %s", async (_, token) => {
    const { request, manager } = setup();
    const response = await request("/computers/home-1", { token });
    expect(response.status).toBe(401);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect(response.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(await response.json()).toMatchObject({ status: 401, code: "UNAUTHORIZED" });
    expect(manager.calls).toEqual([]);
  });

  it("refuses a token sent another way than Bearer", async () => {
    const { request } = setup();
    const response = await request("/computers", {
      token: null,
      headers: { authorization: `Basic ${TOKEN}` },
    });
    expect(response.status).toBe(401);
  });

  it("guards unknown routes too (401 before 404)", async () => {
    const { request } = setup();
    expect((await request("/nope", { token: null })).status).toBe(401);
    const missing = await request("/nope");
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: "NOT_FOUND" });
  });

  it("lets the right token through", async () => {
    const { request } = setup();
    const response = await request("/computers");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ computers: [] });
  });
});

describe("home keys and identities", () => {
  it.each(["-leading-dash", "has.dot", "has space", "a".repeat(129), "...", "ünï"])(
    "refuses home key %j with 400 INVALID_HOME_KEY",
    async (homeKey) => {
      const { request, manager } = setup();
      const response = await request(`/computers/${encodeURIComponent(homeKey)}`, {
        method: "PUT",
        ...json({ computerId: "c", workspaceId: "w" }),
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ code: "INVALID_HOME_KEY" });
      expect(manager.calls).toEqual([]);
    },
  );

  it("creates with the identity from the body", async () => {
    const { request, manager } = setup();
    const response = await request("/computers/team-ws_1", {
      method: "PUT",
      identity: false,
      ...json({ computerId: "c1", workspaceId: "w1" }),
    });
    expect(response.status).toBe(201);
    expect(await response.json()).toEqual({
      providerRef: "container-id",
      fresh: true,
      homeCreated: true,
      state: "running",
    });
    expect(manager.calls).toEqual([
      { method: "create", ref: { homeKey: "team-ws_1", computerId: "c1", workspaceId: "w1" } },
    ]);
  });

  it("requires the identity headers on later calls", async () => {
    const { request } = setup();
    const response = await request("/computers/home-1", { identity: false });
    expect(response.status).toBe(400);
    const problem = await response.json();
    expect(problem.code).toBe("INVALID_REQUEST");
    expect(problem.errors.map((error: { path: string }) => error.path)).toEqual([
      COMPUTER_ID_HEADER,
      WORKSPACE_ID_HEADER,
    ]);
  });

  it("passes the identity headers to the manager", async () => {
    const { request, manager } = setup();
    expect((await request("/computers/home-1")).status).toBe(200);
    expect(manager.calls[0]?.ref).toEqual({
      homeKey: "home-1",
      computerId: "computer-1",
      workspaceId: "workspace-1",
    });
  });
});

describe("request validation", () => {
  it("refuses screens past 7 with SCREEN_OUT_OF_RANGE", async () => {
    const { request, manager } = setup();
    const response = await request("/computers/home-1/screens/8", { method: "PUT" });
    expect(response.status).toBe(400);
    const problem = await response.json();
    expect(problem.code).toBe("SCREEN_OUT_OF_RANGE");
    expect(problem.detail).toMatch(/8 screens/);
    expect(manager.calls).toEqual([]);
    expect((await request("/computers/home-1/screens/7", { method: "PUT" })).status).toBe(200);
  });

  it("validates the whole action batch before anything runs", async () => {
    const { request, manager } = setup();
    const good = { type: "move", x: 1, y: 2 };
    const tooMany = await request("/computers/home-1/screens/0/act", {
      method: "POST",
      ...json({ actions: Array(25).fill(good) }),
    });
    expect(tooMany.status).toBe(400);
    expect(await tooMany.json()).toMatchObject({ code: "INVALID_ACTIONS" });
    const oneBad = await request("/computers/home-1/screens/0/act", {
      method: "POST",
      ...json({ actions: [good, { type: "key", key: "Return; rm -rf /" }] }),
    });
    expect(oneBad.status).toBe(400);
    expect(manager.calls).toEqual([]);
    const ok = await request("/computers/home-1/screens/0/act", {
      method: "POST",
      ...json({ actions: [good] }),
    });
    expect(await ok.json()).toEqual({ completed: 1, total: 1 });
  });

  it("refuses an exec body that is not a command", async () => {
    const { request } = setup();
    const response = await request("/computers/home-1/exec", {
      method: "POST",
      ...json({ command: "", timeoutMs: 0, env: { "BAD-NAME": "x" } }),
    });
    expect(response.status).toBe(400);
    const problem = await response.json();
    expect(problem.code).toBe("INVALID_REQUEST");
    expect(problem.errors.map((error: { path: string }) => error.path).sort()).toEqual([
      "command",
      "env.BAD-NAME",
      "timeoutMs",
    ]);
  });

  it("streams exec events as NDJSON", async () => {
    const { request } = setup();
    const response = await request("/computers/home-1/exec", {
      method: "POST",
      ...json({ command: "echo hi", timeoutMs: 1000 }),
    });
    expect(response.headers.get("content-type")).toBe("application/x-ndjson");
    expect(await response.text()).toBe(
      '\n{"type":"stdout","data":"hi\\n"}\n{"type":"exit","code":0,"truncated":false}\n',
    );
  });

  it("refuses a malformed JSON body", async () => {
    const { request } = setup();
    const response = await request("/reconcile", {
      method: "POST",
      body: "{",
      headers: { "content-type": "application/json" },
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: "INVALID_REQUEST" });
  });

  it("answers unexpected failures with a bare 500 and logs them", async () => {
    const { request, errors } = setup();
    const response = await request("/computers/home-1/stop", { method: "POST" });
    expect(response.status).toBe(500);
    const problem = await response.json();
    expect(problem).toMatchObject({ code: "INTERNAL" });
    expect(JSON.stringify(problem)).not.toMatch(/stub/);
    expect(errors).toHaveLength(1);
  });
});

describe("browsers", () => {
  it.each([
    ["settle", "settleBrowsers"],
    ["close", "closeBrowsers"],
  ])("POST /computers/:homeKey/browsers/%s asks the manager and answers 204", async (what, method) => {
    const { request, manager } = setup();
    const response = await request(`/computers/home-1/browsers/${what}`, { method: "POST" });
    expect(response.status).toBe(204);
    expect(manager.calls).toEqual([
      { method, ref: { homeKey: "home-1", computerId: "computer-1", workspaceId: "workspace-1" } },
    ]);

    const anonymous = await request(`/computers/home-1/browsers/${what}`, {
      method: "POST",
      identity: false,
    });
    expect(anonymous.status).toBe(400);
    expect(
      (await request(`/computers/home-1/browsers/${what}`, { method: "POST", token: null })).status,
    ).toBe(401);
    expect(manager.calls).toHaveLength(1);
  });
});

describe("egress routes", () => {
  it("passes a valid policy on and answers 204", async () => {
    const { request, manager } = setup();
    const policy = { level: "allowlist", allow: [{ host: "api.example.com", ports: [443] }] };
    const response = await request("/computers/home-1/egress", { method: "PUT", ...json(policy) });
    expect(response.status).toBe(204);
    expect(manager.calls).toContainEqual(expect.objectContaining({ method: "setEgress", args: [policy] }));
  });

  it("refuses a bad level, host, port, and destinations on another level, listing each", async () => {
    const { request, manager } = setup();
    const bad = await request("/computers/home-1/egress", {
      method: "PUT",
      ...json({ level: "sometimes", allow: [{ host: "10.0.0.0/99", ports: [99999] }] }),
    });
    expect(bad.status).toBe(400);
    expect(bad.headers.get("content-type")).toBe("application/problem+json");
    const problem = (await bad.json()) as { code: string; errors: { path: string }[] };
    expect(problem.code).toBe("INVALID_REQUEST");
    expect(problem.errors.map((error) => error.path)).toEqual(
      expect.arrayContaining(["level", "allow.0.host", "allow.0.ports.0"]),
    );
    const misplaced = await request("/computers/home-1/egress", {
      method: "PUT",
      ...json({ level: "offline", allow: [{ host: "example.com", ports: [] }] }),
    });
    expect(await misplaced.json()).toMatchObject({ status: 400, errors: [{ path: "allow" }] });
    expect(manager.calls.filter((call) => call.method === "setEgress")).toEqual([]);
  });

  it("answers the policy and report, passing the cursor on; a malformed cursor is a 400", async () => {
    const { request, manager } = setup();
    const response = await request("/computers/home-1/egress?after=0a1b2c3d.7");
    expect(await response.json()).toMatchObject({
      policy: { level: "default" },
      report: { refusedTotal: 0 },
    });
    expect(manager.calls).toContainEqual(expect.objectContaining({ method: "egress", args: ["0a1b2c3d.7"] }));
    expect((await request("/computers/home-1/egress?after=nope")).status).toBe(400);
  });
});

describe("archive routes", () => {
  const post = (body: unknown) => ({ method: "POST", ...json(body) });

  it("passes the named paths on normalised, as home-relative as the home's path rules make them", async () => {
    const { request, manager } = setup();
    const response = await request("/computers/home-1/archive", post({ paths: [".", "dir/", "a/./b"] }));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/x-tar");
    expect(manager.calls).toEqual([
      { method: "exportHome", ref: expect.anything(), args: [{ paths: ["", "dir", "a/b"] }] },
    ]);
  });

  it.each([
    ["an absolute path", "/etc/passwd", "PATH_OUTSIDE_HOME"],
    ["a path climbing out", "dir/../../x", "PATH_OUTSIDE_HOME"],
    ["a NUL byte", "a\0b", "PATH_OUTSIDE_HOME"],
    ["a name too long", "n".repeat(256), "INVALID_PATH"],
  ])("refuses %s with problem JSON naming it, before anything is read", async (_, path, code) => {
    const { request, manager } = setup();
    const response = await request("/computers/home-1/archive", post({ paths: ["ok.txt", path] }));
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect(await response.json()).toMatchObject({ code, errors: [{ path: "paths.1" }] });
    expect(manager.calls).toEqual([]);
  });

  it.each([
    ["no paths", {}],
    ["paths that are not a list of strings", { paths: ["a", 1] }],
  ])("refuses a body with %s", async (_, body) => {
    const { request, manager } = setup();
    const response = await request("/computers/home-1/archive", post(body));
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: "INVALID_REQUEST" });
    expect(manager.calls).toEqual([]);
  });
});
