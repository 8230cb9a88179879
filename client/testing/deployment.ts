import { randomBytes } from "node:crypto";
import { destroyMachines } from "@cubicle/api/testing/computers";
import { expectStatus } from "@cubicle/api/testing/harness";
import { startApiOnTestSupervisor } from "@cubicle/api/testing/supervisor-process";
import type { TestProject } from "vitest/node";

/** What the client suites are given: one real deployment, reached only over its public api. */
export interface ClientDeployment {
  url: string;
  workspaceId: string;
  /** A member's API key: what an automation holds. */
  memberKey: string;
  /** An admin's API key: only for setting a test's stage (making bots). */
  adminKey: string;
  /** SESSION_LEASE_MS of this deployment. */
  sessionLeaseMs: number;
}

declare module "vitest" {
  export interface ProvidedContext {
    clientDeployment: ClientDeployment;
  }
}

/** Short enough for a test to watch a session expire, long enough for a slow CLI between calls. */
const SESSION_LEASE_MS = 20_000;

/**
 * One deployment for every client suite (library, CLI, MCP): a real api on a real supervisor whose
 * computers are real Docker desktops. The suites are its users, each with bots of its own on the
 * workspace's one Team Computer (a screen each), as several automations of one team would be.
 */
export default async function setup(project: TestProject) {
  const { supervisor, t } = await startApiOnTestSupervisor({ SESSION_LEASE_MS: String(SESSION_LEASE_MS) });
  const owner = t.client();
  expectStatus(await owner.signUp(`owner-${randomBytes(4).toString("hex")}@example.com`), 200);
  const workspace = expectStatus(await owner.post("/v1/workspaces", { name: "Automations" }), 201).json;
  const key = async (role: "admin" | "member") =>
    expectStatus(
      await owner.post(`/v1/workspaces/${workspace.id}/api-keys`, { name: `${role} robot`, role }),
      201,
    ).json.key as string;
  project.provide("clientDeployment", {
    url: t.api.url,
    workspaceId: workspace.id,
    memberKey: await key("member"),
    adminKey: await key("admin"),
    sessionLeaseMs: SESSION_LEASE_MS,
  });
  return async () => {
    // containers outlive the supervisor: remove the ones this deployment made
    await destroyMachines(t);
    await t.close();
    await supervisor.close();
  };
}
