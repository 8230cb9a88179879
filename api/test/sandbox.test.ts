import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { expectStatus, startTestApi, type TestApi } from "../testing/harness.ts";
import { until } from "../testing/until.ts";
import { buildWorld } from "../testing/world.ts";

const running: TestApi[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((t) => t.close()));
});

async function api(env: Record<string, string>) {
  const t = await startTestApi(env);
  running.push(t);
  return t;
}

const health = async (t: TestApi) => expectStatus(await t.client().get("/health"), 200).json;

describe("the effective sandbox provider", () => {
  it("is the configured one by default", async () => {
    const t = await api({ SANDBOX_PROVIDER: "fake" });
    expect(await health(t)).toMatchObject({
      sandbox: "fake",
      configured: "fake",
      override: "isolated",
      sandboxNote: null,
    });
  });

  it("runs a remote provider without its key as none, and says why", async () => {
    const t = await api({ SANDBOX_PROVIDER: "e2b" });
    expect(await health(t)).toMatchObject({
      sandbox: "none",
      configured: "e2b",
      sandboxNote: "E2B_API_KEY is not set",
    });
    const withKey = await api({ SANDBOX_PROVIDER: "daytona", DAYTONA_API_KEY: "dtn_test_key" });
    expect(await health(withKey)).toMatchObject({ sandbox: "daytona", configured: "daytona" });
  });

  it("turns docker into desktop when the owner sets the computer host to this-host, audited", async () => {
    const t = await api({
      SANDBOX_PROVIDER: "docker",
      SANDBOX_SUPERVISOR_TOKEN: randomBytes(32).toString("hex"),
    });
    expect(await health(t)).toMatchObject({ sandbox: "docker", configured: "docker", override: "isolated" });

    const world = await buildWorld(t, "host");
    const refused = await world.people.admin.patch("/v1/deployment/settings", { computerHost: "this-host" });
    expect(refused.status).toBe(404);
    const invalid = await world.people.owner.patch("/v1/deployment/settings", { computerHost: "the-moon" });
    expect(invalid.json).toMatchObject({ status: 400, code: "VALIDATION_FAILED" });
    const empty = await world.people.owner.patch("/v1/deployment/settings", {});
    expect(empty.json).toMatchObject({ status: 400, code: "VALIDATION_FAILED" });

    const changed = expectStatus(
      await world.people.owner.patch("/v1/deployment/settings", { computerHost: "this-host" }),
      200,
    ).json;
    expect(changed).toMatchObject({ computerHost: "this-host", signupsOpen: true });
    expect(await health(t)).toMatchObject({
      sandbox: "desktop",
      configured: "docker",
      override: "this-host",
      sandboxNote: "the computer host setting is this-host",
    });

    const audit = await t.database.db
      .selectFrom("audit_events")
      .selectAll()
      .where("action", "=", "deployment.computer_host_changed")
      .execute();
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      actor_id: world.people.owner.userId,
      data: { from: "isolated", to: "this-host" },
    });

    expectStatus(
      await world.people.owner.patch("/v1/deployment/settings", { computerHost: "isolated" }),
      200,
    );
    expect(await health(t)).toMatchObject({ sandbox: "docker", override: "isolated" });
  });

  it("leaves non-docker providers alone when the computer host is this-host", async () => {
    const t = await api({ SANDBOX_PROVIDER: "fake" });
    const world = await buildWorld(t, "fakehost");
    expectStatus(
      await world.people.owner.patch("/v1/deployment/settings", { computerHost: "this-host" }),
      200,
    );
    expect(await health(t)).toMatchObject({ sandbox: "fake", configured: "fake", override: "this-host" });
  });
});

describe("/health and the provider in effect", () => {
  it("says degraded, naming the problem, while the supervisor does not answer, and ok when it does again", async () => {
    // a supervisor that stops answering, as a SIGSTOPped one does: connections are taken, no reply comes
    const supervisor = { answering: true };
    const server = createServer((req, res) => {
      if (!supervisor.answering) return;
      if (req.url === "/computers")
        res.writeHead(200, { "content-type": "application/json" }).end('{"computers":[]}');
      else res.writeHead(204).end();
    });
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    try {
      const t = await api({
        SANDBOX_PROVIDER: "docker",
        SANDBOX_SUPERVISOR_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        SANDBOX_SUPERVISOR_TOKEN: randomBytes(32).toString("hex"),
      });
      expect(await health(t)).toMatchObject({
        ok: true,
        status: "ok",
        provider: "ok",
        providerProblem: null,
      });

      supervisor.answering = false;
      const degraded = await until("health to say degraded", async () => {
        const now = await health(t);
        return now.status === "degraded" ? now : undefined;
      });
      expect(degraded).toMatchObject({
        ok: false,
        db: "ok",
        provider: "error",
        providerProblem: "PROVIDER_UNAVAILABLE: the provider did not answer within 3 s",
      });

      supervisor.answering = true;
      await until("health to say ok again", async () =>
        (await health(t)).status === "ok" ? true : undefined,
      );
    } finally {
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
    }
  });
});
