import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { Computer } from "@cubicle/db";
import { expect } from "vitest";
import { machineOfRecord } from "../src/computers/repository.ts";
import { expectStatus, type TestApi } from "./harness.ts";
import { treeOf } from "./homes.ts";
import { createBot, type OpenedSession, SessionClient } from "./sessions.ts";
import type { World } from "./world.ts";

export interface CheckpointView {
  id: string;
  reason: string;
  parentId: string | null;
  sizeBytes: number;
  fileCount: number;
  newBytes: number;
  sha256: string;
}

/**
 * Checkpoint calls of a world's owner against one api (a replica of the deployment), and what to
 * check them with: the home as the provider holds it, downloads, audits.
 */
export function checkpointsOn(api: () => TestApi, world: () => World) {
  const computers = () => `/v1/workspaces/${world().workspaceId}/computers`;
  const checkpoints = (computerId: string) => `${computers()}/${computerId}/checkpoints`;
  const owner = () => world().people.owner.at(api().api.url);
  const sessions = () => new SessionClient({ client: owner() }, world().workspaceId);
  const computerRow = (id: string): Promise<Computer> =>
    api().database.db.selectFrom("computers").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
  return {
    checkpoints,
    owner,
    sessions,
    computerRow,
    async list(computerId: string): Promise<CheckpointView[]> {
      return expectStatus(await owner().get(checkpoints(computerId)), 200).json.items;
    },
    async take(computerId: string): Promise<CheckpointView> {
      return expectStatus(await owner().post(checkpoints(computerId)), 201).json;
    },
    async restore(computerId: string, checkpointId: string, into: "current" | "fresh") {
      return expectStatus(
        await owner().post(`${checkpoints(computerId)}/${checkpointId}/restore`, { into }),
        200,
      ).json;
    },
    /** Closes the computer's browsers: a checkpoint then has none to wait for while a session is open. */
    async closeBrowsers(computerId: string) {
      const machine = await machineOfRecord(api().api.deps, await computerRow(computerId));
      if (!machine) throw new Error("the computer has no machine");
      await machine.provider.closeBrowsers(machine.ref);
    },
    /** The home as the provider holds it now: path → entry. */
    async home(computerId: string) {
      const computer = await computerRow(computerId);
      const machine = await machineOfRecord(api().api.deps, computer);
      if (!machine) throw new Error("the computer has no machine");
      return treeOf(await machine.provider.exportHome(machine.ref));
    },
    /** A revision as the admin download gives it. */
    async download(computerId: string, checkpointId: string) {
      const response = await owner().fetch("GET", `${checkpoints(computerId)}/${checkpointId}/archive`);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("application/x-tar");
      expect(response.headers.get("content-disposition")).toContain(`${checkpointId}.tar`);
      if (!response.body) throw new Error("no archive body");
      return treeOf(response.body);
    },
    /** A Private bot with an open session on its own (running) computer. */
    async privateSession(): Promise<OpenedSession> {
      const bot = await createBot(owner(), world().workspaceId, "private");
      return sessions().opened(bot.id);
    },
    async write(s: OpenedSession, files: Record<string, string | Buffer>) {
      for (const [path, content] of Object.entries(files)) {
        const response = await owner().fetch(
          "PUT",
          sessions().pathOf(s, `/files/content?path=${encodeURIComponent(path)}`),
          {
            body: typeof content === "string" ? Buffer.from(content) : content,
            headers: { "content-type": "application/octet-stream", "x-session-fence": String(s.fence) },
          },
        );
        expect(response.status, await response.text()).toBe(204);
      }
    },
    async remove(s: OpenedSession, path: string) {
      const response = await sessions().tool(s, "DELETE", `/files?path=${encodeURIComponent(path)}`);
      expect(response.status, response.text).toBe(204);
    },
    async end(s: OpenedSession, outcome: "success" | "failure" = "success") {
      expectStatus(await sessions().end(s, outcome), 200);
    },
    audits: async (computerId: string, action: string) =>
      api()
        .database.db.selectFrom("audit_events")
        .selectAll()
        .where("target_id", "=", computerId)
        .where("action", "=", action)
        .orderBy("id")
        .execute(),
  };
}

/** Whether the store under `checkpointDir` is writing a revision's content right now. */
export function writeUnderWay(checkpointDir: string): true | undefined {
  const tmp = join(checkpointDir, "tmp");
  const temps = existsSync(tmp) ? readdirSync(tmp) : [];
  return temps.some((name) => readdirSync(join(tmp, name)).length > 0) ? true : undefined;
}

/** The manifest files the store holds for a home: the revisions it could restore. */
export function manifestsOn(checkpointDir: string, homeKey: string): string[] {
  const revisions = join(checkpointDir, "homes", homeKey, "revisions");
  return existsSync(revisions) ? readdirSync(revisions).sort() : [];
}
