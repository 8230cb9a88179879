/**
 * A supervisor whose firewall runner cannot change the host's firewall (here: a firewall container
 * that does not exist) claims no enforcement: /health says egress is off and why, and a policy
 * change is refused naming the fix, so a computer's start (which applies its policy) fails loudly
 * instead of running without it.
 */
import { randomBytes } from "node:crypto";
import {
  createSupervisorClient,
  type SupervisorClient,
  SupervisorError,
} from "@cubicle/providers/supervisor-wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSupervisor, type TestSupervisor } from "../../src/testing/supervisor.ts";

const missing = `cubicle-no-firewall-${randomBytes(3).toString("hex")}`;
let supervisor: TestSupervisor;
let client: SupervisorClient;

beforeAll(async () => {
  supervisor = await startTestSupervisor({ env: { SUPERVISOR_FIREWALL_CONTAINER: missing } });
  client = createSupervisorClient({ baseUrl: supervisor.url, token: supervisor.token });
}, 60_000);

afterAll(() => supervisor?.close());

describe("a supervisor that cannot change the host's firewall", () => {
  it("says egress is off, why and what to do, and refuses a policy naming the fix", async () => {
    const health = await client.health();
    expect(health.egress).toBe("off");
    expect(health.hostFirewall).toBe("off");
    expect(health.egressProblem).toContain(`container ${missing} cannot change the host's firewall`);
    expect(health.egressProblem).toContain("SUPERVISOR_FIREWALL_CONTAINER");

    const ref = { homeKey: `unenforced-${missing}`, computerId: "c", workspaceId: "w" };
    const refused = await client
      .setEgress(ref, { level: "offline", allow: [] })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SupervisorError);
    expect(refused).toMatchObject({ status: 503, code: "EGRESS_UNENFORCED" });
    expect((refused as Error).message).toContain("run the supervisor as root on the Docker host");
  });
});
