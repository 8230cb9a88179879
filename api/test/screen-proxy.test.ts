import { randomBytes } from "node:crypto";
import type { Computer } from "@cubicle/db";
import { parseProxyConfig, type RunningProxy, startProxy } from "@cubicle/proxy";
import { CapabilityKeyring, mintCapability } from "@cubicle/proxy/capability";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createComputer, destroyMachine, machineFor } from "../testing/computers.ts";
import {
  expectStatus,
  startTestApi,
  type TestApi,
  type TestClient,
  TRUSTED_ORIGIN,
} from "../testing/harness.ts";
import { expectStillLive } from "../testing/revocation.ts";
import { openScreenSocket, refusedStatus } from "../testing/screen-socket.ts";
import { startVendorScreen } from "../testing/vendor-screen.ts";
import { buildWorld, type World } from "../testing/world.ts";

/**
 * The screen path end to end: api mints, the real proxy verifies and relays, a real desktop screen
 * (Xvfb + x11vnc of the desktop provider) answers. Runs on both database dialects, so redemption and
 * control-lease notifications are proven on PGlite and on Postgres.
 */
const key = randomBytes(32).toString("base64url");
const METRICS_TOKEN = randomBytes(32).toString("base64url");
let t: TestApi;
let proxy: RunningProxy;
let world: World;
let computer: Computer;

beforeAll(async () => {
  // Short control leases, so that one test can watch a lease expire.
  t = await startTestApi({
    SANDBOX_PROVIDER: "desktop",
    SCREEN_CAPABILITY_KEY: key,
    CONTROL_LEASE_MS: "6000",
  });
  proxy = await startProxy(
    parseProxyConfig({
      SCREEN_CAPABILITY_KEY: key,
      PROXY_PORT: "0",
      CUBICLE_API_URL: t.api.url,
      PROXY_ALLOWED_ORIGINS: TRUSTED_ORIGIN,
      LOG_LEVEL: "silent",
      METRICS_TOKEN,
    }),
  );
  world = await buildWorld(t, "screens");
  computer = await createComputer(t, world.workspaceId);
  await until(() => proxy.controlLeasesFollowed());
});

afterAll(async () => {
  await proxy?.close();
  if (computer) {
    await destroyMachine(t, computer);
  }
  await t?.close();
});

async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met in time: ${condition.toString()}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const screenPath = (index = 0) =>
  `/v1/workspaces/${world.workspaceId}/computers/${computer.id}/screens/${index}`;

async function mint(client: TestClient, mode: "view" | "control", index = 0): Promise<string> {
  return expectStatus(await client.post(`${screenPath(index)}/capabilities`, { mode }), 201).json.token;
}

async function takeControl(client: TestClient, index = 0): Promise<string> {
  const response = await client.post(`${screenPath(index)}/control`);
  expect([200, 201]).toContain(response.status);
  return response.json.leaseId;
}

async function cursor() {
  const { provider, ref } = await machineFor(t, computer);
  return (await provider.observe(ref, 0)).cursor;
}

async function homeHas(name: string): Promise<boolean> {
  const { provider, ref } = await machineFor(t, computer);
  return (await provider.listFiles(ref, "")).some((entry) => entry.name === name);
}

const RETURN = 0xff0d;

/** Points at the xterm (focus follows the pointer) and types a shell command that leaves a file. */
async function scriptedInput(
  rfb: { pointerEvent(x: number, y: number, mask?: number): void; keyEvent(k: number, d: boolean): void },
  file: string,
) {
  rfb.pointerEvent(120, 140);
  rfb.pointerEvent(120, 140, 1);
  rfb.pointerEvent(120, 140, 0);
  for (const char of `touch ${file}`) {
    rfb.keyEvent(char.charCodeAt(0), true);
    rfb.keyEvent(char.charCodeAt(0), false);
  }
  rfb.keyEvent(RETURN, true);
  rfb.keyEvent(RETURN, false);
}

/** A control capability for a real lease whose target is the screen's view server, which release leaves running. */
async function mintOnLiveTarget(leaseId: string): Promise<string> {
  const { provider, ref } = await machineFor(t, computer);
  const { token } = await mintCapability(new CapabilityKeyring({ current: key }), {
    // the holder's own subject: the proxy checks that it may still control this screen
    subject: `user:${world.people.member.userId}`,
    workspaceId: world.workspaceId,
    computerId: computer.id,
    screen: 0,
    mode: "control",
    controlLeaseId: leaseId,
    target: await provider.openScreen(ref, 0),
  });
  return token;
}

function distinctPixels(pixels: Buffer | undefined): number {
  const seen = new Set<number>();
  if (!pixels) return 0;
  for (let i = 0; i + 4 <= pixels.length; i += 4 * 97) seen.add(pixels.readUInt32LE(i) & 0xffffff);
  return seen.size;
}

describe("the screen proxy", () => {
  it("shows a viewer the live screen: ServerInit, then a full frame of real, non-uniform pixels", async () => {
    const screen = await openScreenSocket(proxy.url, await mint(world.people.viewer, "view"), {
      origin: TRUSTED_ORIGIN,
    });
    expect(screen.rfb.serverInit).toMatchObject({ width: 1280, height: 800 });
    screen.rfb.setEncodings([0]);
    screen.rfb.requestUpdate();
    const rectangles = await screen.rfb.readUpdate();
    expect(rectangles.length).toBeGreaterThan(0);
    expect(Math.max(...rectangles.map((r) => distinctPixels(r.pixels)))).toBeGreaterThan(1);
    screen.ws.close();
  });

  it("drops every input of a view socket: the pointer stays put and nothing typed runs", async () => {
    const { provider, ref } = await machineFor(t, computer);
    await provider.act(ref, 0, [{ type: "move", x: 600, y: 500 }]);
    const before = await cursor();
    const screen = await openScreenSocket(proxy.url, await mint(world.people.member, "view"));
    const file = `view-typed-${randomBytes(3).toString("hex")}`;
    await scriptedInput(screen.rfb, file);
    screen.rfb.cutText("pasted");
    // a round trip through the socket proves the proxy has handled everything sent before it
    screen.rfb.requestUpdate({ x: 0, y: 0, width: 8, height: 8 });
    await screen.rfb.readUpdate();
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(await cursor()).toEqual(before);
    expect(await homeHas(file)).toBe(false);
    const metrics = await proxy.metrics.registry.getSingleMetricAsString(
      "cubicle_proxy_dropped_input_messages_total",
    );
    expect(Number(/ (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(
      2 * (`touch ${file}`.length + 1) + 3,
    );
    screen.ws.close();
  });

  it("lets the holder of the control lease type and point through a control socket", async () => {
    const leaseId = await takeControl(world.people.member);
    const screen = await openScreenSocket(proxy.url, await mint(world.people.member, "control"));
    const file = `control-typed-${randomBytes(3).toString("hex")}`;
    await scriptedInput(screen.rfb, file);
    await until(async () => (await cursor()).x === 120 && (await cursor()).y === 140);
    await until(() => homeHas(file));
    screen.ws.close();
    expectStatus(await world.people.member.delete(`${screenPath()}/control/${leaseId}`), 204);
  });

  it("closes a live control socket on release, while a view socket stays open", async () => {
    const leaseId = await takeControl(world.people.admin);
    const control = await openScreenSocket(proxy.url, await mint(world.people.admin, "control"));
    const view = await openScreenSocket(proxy.url, await mint(world.people.viewer, "view"));
    expectStatus(await world.people.admin.delete(`${screenPath()}/control/${leaseId}`), 204);
    await control.closed;
    await expectStillLive([view]);
  });

  // Above, stopping the control server also cuts the socket. Here the target outlives the lease (as a
  // vendor's screen does), so only the proxy's own revocation can close it.
  it("revokes by itself: a control socket whose screen outlives the lease closes on release and on expiry", async () => {
    for (const end of ["release", "expiry"] as const) {
      const lease = expectStatus(await world.people.member.post(`${screenPath()}/control`), 201).json;
      const control = await openScreenSocket(proxy.url, await mintOnLiveTarget(lease.leaseId));
      const view = await openScreenSocket(proxy.url, await mint(world.people.viewer, "view"));
      if (end === "release")
        expectStatus(await world.people.member.delete(`${screenPath()}/control/${lease.leaseId}`), 204);
      expect(await control.closed).toBe(4001);
      if (end === "expiry") expect(Date.now()).toBeGreaterThanOrEqual(new Date(lease.expiresAt).getTime());
      await expectStillLive([view]);
    }
  });

  it("refuses a control capability once its lease has ended, and control for a viewer at the api", async () => {
    const leaseId = await takeControl(world.people.member);
    const token = await mint(world.people.member, "control");
    expectStatus(await world.people.member.delete(`${screenPath()}/control/${leaseId}`), 204);
    // the proxy hears of the release within milliseconds; half a second is ample
    await new Promise((resolve) => setTimeout(resolve, 500));
    const before = await refusals("control-lease");
    expect(await refusedStatus(proxy.url, ["cubicle.screen.v1", token])).toBe(404);
    expect(await refusals("control-lease")).toBe(before + 1);
    expectStatus(await world.people.viewer.post(`${screenPath()}/control`), 403);
    expect((await world.people.viewer.post(`${screenPath()}/capabilities`, { mode: "control" })).status).toBe(
      403,
    );
  });

  it("answers 404 at the api when a member of another workspace asks for this computer's screen", async () => {
    const response = await world.people.outsider.post(`${screenPath()}/capabilities`, { mode: "view" });
    expectStatus(response, 404);
    const elsewhere = `/v1/workspaces/${world.otherWorkspaceId}/computers/${computer.id}/screens/0/capabilities`;
    expectStatus(await world.people.outsider.post(elsewhere, { mode: "view" }), 404);
  });

  describe("refuses, with the same bare 404, a socket presenting", () => {
    const keyring = () => new CapabilityKeyring({ current: key });
    const grant = () => ({
      subject: "user:someone",
      workspaceId: world.workspaceId,
      computerId: computer.id,
      screen: 0,
      mode: "view" as const,
      target: { kind: "vnc" as const, host: "127.0.0.1", port: 1, password: "x" },
    });
    const cases: Array<[string, () => Promise<string[]>, string]> = [
      ["no token", async () => ["cubicle.screen.v1"], "malformed"],
      [
        "only a token, without our protocol",
        async () => [(await mintCapability(keyring(), grant())).token],
        "malformed",
      ],
      [
        "an expired token",
        async () => [
          "cubicle.screen.v1",
          (await mintCapability(keyring(), grant(), { now: new Date(Date.now() - 120_000) })).token,
        ],
        "expired",
      ],
      [
        "a token signed with a key the proxy does not hold",
        async () => [
          "cubicle.screen.v1",
          (await mintCapability(new CapabilityKeyring({ current: "u".repeat(40) }), grant())).token,
        ],
        "unknown-key",
      ],
      [
        "an unsigned (alg none) token",
        async () => {
          const header = Buffer.from(JSON.stringify({ alg: "none", typ: "cubicle-screen+jwt" })).toString(
            "base64url",
          );
          const body = Buffer.from(JSON.stringify({ sub: "user:x", aud: "cubicle-proxy" })).toString(
            "base64url",
          );
          return ["cubicle.screen.v1", `${header}.${body}.`];
        },
        "algorithm",
      ],
    ];
    it.each(cases)("%s", async (_name, protocols, reason) => {
      const before = await refusals(reason);
      expect(await refusedStatus(proxy.url, await protocols())).toBe(404);
      expect(await refusals(reason)).toBe(before + 1);
    });

    it("a token already used once", async () => {
      const token = await mint(world.people.member, "view");
      const first = await openScreenSocket(proxy.url, token);
      expect(await refusedStatus(proxy.url, ["cubicle.screen.v1", token])).toBe(404);
      first.ws.close();
    });

    it("a valid token from a page of another origin", async () => {
      const token = await mint(world.people.member, "view");
      expect(await refusedStatus(proxy.url, ["cubicle.screen.v1", token], "https://evil.example.net")).toBe(
        404,
      );
    });
  });

  it("reaches a vendor screen whose URL holds a secret, which nothing on the browser side ever sees", async () => {
    const { provider, ref } = await machineFor(t, computer);
    const view = await provider.openScreen(ref, 0);
    if (view.kind !== "vnc") throw new Error("the desktop provider gives VNC targets");
    const secret = `box-secret-${randomBytes(12).toString("hex")}`;
    const vendor = await startVendorScreen(view, secret);
    try {
      const { token } = await mintCapability(new CapabilityKeyring({ current: key }), {
        subject: `user:${world.people.viewer.userId}`,
        workspaceId: world.workspaceId,
        computerId: computer.id,
        screen: 0,
        mode: "view",
        target: { kind: "vendor-websocket", url: vendor.url, password: view.password },
      });
      expect(token).not.toContain(secret);
      const screen = await openScreenSocket(proxy.url, token, { origin: TRUSTED_ORIGIN });
      screen.rfb.requestUpdate();
      expect((await screen.rfb.readUpdate()).length).toBeGreaterThan(0);
      screen.ws.close();
      expect(vendor.refused).toBe(0);
      const seen = [
        screen.captured.headers.join("\n"),
        ...screen.captured.frames.map((f) => f.toString("latin1")),
      ];
      expect(screen.captured.frames.length).toBeGreaterThan(0);
      for (const text of [...seen, ...t.responses]) {
        expect(text).not.toContain(secret);
        expect(text).not.toContain(encodeURIComponent(secret));
      }
      // without the secret, the vendor refuses: the proxy is what added it
      expect(await refusedStatus(vendor.url.replace(/\?.*$/, ""), [])).toBe(401);
    } finally {
      await vendor.close();
    }
  });

  it("holds each subject to its socket limit, closes idle sockets and oversized messages", async () => {
    const strict = await startProxy(
      parseProxyConfig({
        SCREEN_CAPABILITY_KEY: key,
        PROXY_PORT: "0",
        CUBICLE_API_URL: t.api.url,
        PROXY_MAX_SOCKETS_PER_SUBJECT: "1",
        PROXY_IDLE_TIMEOUT_MS: "1000",
        PROXY_MAX_FRAME_BYTES: "1024",
        LOG_LEVEL: "silent",
      }),
    );
    try {
      const first = await openScreenSocket(strict.url, await mint(world.people.member, "view"));
      expect(
        await refusedStatus(strict.url, ["cubicle.screen.v1", await mint(world.people.member, "view")]),
      ).toBe(404);
      const other = await openScreenSocket(strict.url, await mint(world.people.viewer, "view"));
      expect(await first.closed).toBe(4002);
      const paste = await openScreenSocket(strict.url, await mint(world.people.member, "view"));
      paste.rfb.cutText("x".repeat(4096));
      expect(await paste.closed).toBe(1008);
      expect(await other.closed).toBe(4002);
    } finally {
      await strict.close();
    }
  });

  it("closes a view socket with 1008 and a reason on an unknown, malformed or oversized message", async () => {
    const strict = await startProxy(
      parseProxyConfig({
        SCREEN_CAPABILITY_KEY: key,
        PROXY_PORT: "0",
        CUBICLE_API_URL: t.api.url,
        PROXY_MAX_FRAME_BYTES: "1024",
        LOG_LEVEL: "silent",
      }),
    );
    const closeAfter = async (send: (screen: Awaited<ReturnType<typeof openScreenSocket>>) => void) => {
      const screen = await openScreenSocket(strict.url, await mint(world.people.viewer, "view"));
      send(screen);
      return screen.closedWith;
    };
    const cutTextHeader = (length: number) => {
      const header = Buffer.alloc(8);
      header.writeUInt8(6, 0); // ClientCutText
      header.writeUInt32BE(length, 4);
      return header;
    };
    try {
      const violation = { code: 1008, reason: "protocol violation" };
      const tooLarge = { code: 1008, reason: "message too large" };
      expect.soft(await closeAfter((s) => s.rfb.send(Buffer.from([7, 0, 0, 0])))).toEqual(violation);
      // a ClientFence whose payload is longer than a fence can carry
      expect
        .soft(await closeAfter((s) => s.rfb.send(Buffer.from([248, 0, 0, 0, 0, 0, 0, 0, 200]))))
        .toEqual(violation);
      // one WebSocket frame over PROXY_MAX_FRAME_BYTES
      expect.soft(await closeAfter((s) => s.rfb.cutText("x".repeat(4096)))).toEqual(tooLarge);
      // an RFB message over the limit, in frames that are each small enough
      expect
        .soft(
          await closeAfter((s) => {
            s.ws.send(cutTextHeader(4096));
            for (let i = 0; i < 8; i++) s.ws.send(Buffer.alloc(512, 0x78));
          }),
        )
        .toEqual(tooLarge);
    } finally {
      await strict.close();
    }
  });

  it("closes a socket whose screen went away with 1000 and a reason, after what the screen sent", async () => {
    const { provider, ref } = await machineFor(t, computer);
    const view = await provider.openScreen(ref, 0);
    if (view.kind !== "vnc") throw new Error("the desktop provider gives VNC targets");
    // a vendor's screen socket in front of the real one, so that the test can take the screen away
    const vendor = await startVendorScreen(view, "goes-away");
    const { token } = await mintCapability(new CapabilityKeyring({ current: key }), {
      // a subject that may view this screen: the proxy checks access at admission
      subject: `user:${world.people.viewer.userId}`,
      workspaceId: world.workspaceId,
      computerId: computer.id,
      screen: 0,
      mode: "view",
      target: { kind: "vendor-websocket", url: vendor.url, password: view.password },
    });
    const screen = await openScreenSocket(proxy.url, token, { origin: TRUSTED_ORIGIN });
    screen.rfb.requestUpdate();
    expect((await screen.rfb.readUpdate()).length).toBeGreaterThan(0);
    await vendor.close();
    expect(await screen.closedWith).toEqual({ code: 1000, reason: "screen closed" });
  });

  it("counts an open screen socket as use of its computer (so it is not idle)", async () => {
    const db = t.database.db;
    // a minute ago: long enough to see the touch, not so long that the idle job (SANDBOX_IDLE_MS,
    // 10 minutes) may suspend the computer before the socket opens
    const longAgo = new Date(Date.now() - 60_000);
    await db
      .updateTable("computers")
      .set({ last_activity_at: longAgo })
      .where("id", "=", computer.id)
      .execute();
    const screen = await openScreenSocket(proxy.url, await mint(world.people.viewer, "view"));
    await until(async () => {
      const row = await db
        .selectFrom("computers")
        .select("last_activity_at")
        .where("id", "=", computer.id)
        .executeTakeFirstOrThrow();
      return row.last_activity_at !== null && new Date(row.last_activity_at).getTime() > longAgo.getTime();
    });
    screen.ws.close();
  });

  describe("for pages of other sites (embedding)", () => {
    const EMBEDDER = "http://127.0.0.1:4100";
    const OTHER = "http://127.0.0.1:4200";
    const setOrigins = async (origins: string[]) =>
      expectStatus(
        await world.people.admin.put(`/v1/workspaces/${world.workspaceId}/embed-origins`, { origins }),
        200,
      );
    const mintFor = async (origin?: string) =>
      expectStatus(
        await world.people.member.post(`${screenPath()}/capabilities`, { mode: "view", origin }),
        201,
      ).json.token as string;

    it("opens for a listed embed origin, refuses others, and closes a socket whose origin is dropped", async () => {
      await setOrigins([EMBEDDER]);
      const before = await refusals("origin");
      expect(await refusedStatus(proxy.url, ["cubicle.screen.v1", await mintFor()], OTHER)).toBe(404);
      expect(await refusals("origin")).toBe(before + 1);
      const embedded = await openScreenSocket(proxy.url, await mintFor(), { origin: EMBEDDER });
      const dashboard = await openScreenSocket(proxy.url, await mintFor(), { origin: TRUSTED_ORIGIN });
      const dropped = Date.now();
      await setOrigins([]);
      expect(await embedded.closed).toBe(4004);
      expect(Date.now() - dropped).toBeLessThan(1_500);
      await expectStillLive([dashboard]);
    });

    it("opens a capability bound to an origin only from that origin's pages", async () => {
      await setOrigins([EMBEDDER, OTHER]);
      const before = await refusals("origin");
      expect(await refusedStatus(proxy.url, ["cubicle.screen.v1", await mintFor(EMBEDDER)], OTHER)).toBe(404);
      expect(await refusedStatus(proxy.url, ["cubicle.screen.v1", await mintFor(EMBEDDER)])).toBe(404);
      expect(
        await refusedStatus(proxy.url, ["cubicle.screen.v1", await mintFor(EMBEDDER)], TRUSTED_ORIGIN),
      ).toBe(404);
      expect(await refusals("origin")).toBe(before + 3);
      const bound = await openScreenSocket(proxy.url, await mintFor(EMBEDDER), { origin: EMBEDDER });
      await expectStillLive([bound]);
      await setOrigins([]);
    });

    /** A member's API key that holds the screen's control lease, as an embedding page's backend does. */
    const keyTakesControl = async (name: string) => {
      const keyText = expectStatus(
        await world.people.owner.post(`/v1/workspaces/${world.workspaceId}/api-keys`, {
          name,
          role: "member",
        }),
        201,
      ).json.key as string;
      const backend = t.client();
      const lease = expectStatus(
        await backend.post(`${screenPath()}/control`, undefined, { apiKey: keyText }),
        201,
      ).json;
      const mintControl = async () =>
        expectStatus(
          await backend.post(`${screenPath()}/capabilities`, { mode: "control" }, { apiKey: keyText }),
          201,
        ).json.token as string;
      return { keyText, backend, lease, mintControl };
    };

    it("tells a viewer that asked for status who controls the screen, and a control socket its lease", async () => {
      const view = await openScreenSocket(proxy.url, await mintFor(), { status: true });
      const plain = await openScreenSocket(proxy.url, await mintFor());
      await until(() => view.statuses.length === 1);
      expect(view.statuses).toEqual([{ type: "controlled", controlled: false }]);

      // an API key takes control for the page it embeds the screen in, and mints under its lease
      const { keyText, backend, lease, mintControl } = await keyTakesControl("embedder");
      await until(() => view.statuses.length === 2);
      expect(view.statuses[1]).toEqual({ type: "controlled", controlled: true });
      const control = await openScreenSocket(proxy.url, await mintControl(), { status: true });
      await until(() => control.statuses.length === 1);
      expect(control.statuses).toEqual([{ type: "lease", expiresAt: lease.expiresAt }]);
      const renewed = expectStatus(
        await backend.post(`${screenPath()}/control/${lease.leaseId}/renew`, undefined, { apiKey: keyText }),
        200,
      ).json;
      await until(() => control.statuses.length === 2);
      expect(control.statuses[1]).toEqual({ type: "lease", expiresAt: renewed.expiresAt });

      const released = Date.now();
      expectStatus(
        await backend.delete(`${screenPath()}/control/${lease.leaseId}`, { apiKey: keyText }),
        204,
      );
      expect(await control.closed).toBe(4001);
      expect(Date.now() - released).toBeLessThan(1_000);
      await until(() => view.statuses.length === 3);
      expect(view.statuses[2]).toEqual({ type: "controlled", controlled: false });
      // a plain RFB client never gets a text frame
      expect(plain.captured.frames.every((frame) => !frame.toString().startsWith('{"type"'))).toBe(true);
      await expectStillLive([view, plain]);
    });

    it("says control ended when the lease's end reaches the proxy just after its control server stopped", async () => {
      const { keyText, backend, lease, mintControl } = await keyTakesControl("embedder, racing");
      const control = await openScreenSocket(proxy.url, await mintControl(), { status: true });
      await until(() => control.statuses.length === 1);
      // the order a loaded machine once gave a release: the control server stops (the api stops it
      // as soon as the lease ends), and the proxy hears of the lease's end a moment later
      const { provider, ref } = await machineFor(t, computer);
      await provider.closeControl(ref, 0);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expectStatus(
        await backend.delete(`${screenPath()}/control/${lease.leaseId}`, { apiKey: keyText }),
        204,
      );
      expect(await control.closed).toBe(4001);
    });
  });

  it("reports health and metrics: open sockets by mode, bytes each way, refusals by reason", async () => {
    const health = await fetch(`${proxy.url}/health`).then((r) => r.json());
    expect(health).toMatchObject({ ok: true, controlLeases: "followed" });
    const text = await fetch(`${proxy.url}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    }).then((r) => r.text());
    expect(text).toMatch(/cubicle_proxy_open_sockets\{mode="view"\} \d+/);
    expect(text).toMatch(/cubicle_proxy_bytes_total\{direction="to_browser"\} [1-9]/);
    expect(text).toMatch(/cubicle_proxy_refusals_total\{reason="replayed"\} [1-9]/);
  });
});

async function refusals(reason: string): Promise<number> {
  const text = await proxy.metrics.registry.getSingleMetricAsString("cubicle_proxy_refusals_total");
  const match = new RegExp(`reason="${reason}"\\} (\\d+)`).exec(text);
  return match ? Number(match[1]) : 0;
}
