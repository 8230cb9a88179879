/**
 * What the load works on, made through the public API as a deployment's users would: a workspace,
 * an admin API key (an automation that also reads the audit trail), Private bots (a computer each)
 * and Team bots (sharing the workspace's Team Computer), and one open session per bot, held by the
 * key, with a small file written on its computer.
 */
import { expectStatus, type TestClient } from "@cubicle/api/testing/harness";
import { createBot, type OpenedSession, SessionClient } from "@cubicle/api/testing/sessions";

/** A small file on each session's computer, for the load's file reads. */
export const NOTES_FILE = "notes.txt";

export interface BenchWorkspace {
  workspaceId: string;
  apiKey: string;
  computerIds: string[];
  sessions: OpenedSession[];
  /** The key's side of the sessions: where their calls go. */
  holder: SessionClient;
}

export async function furnishWorkspace(
  owner: TestClient,
  keyCaller: TestClient,
  bots: { private: number; team: number },
): Promise<BenchWorkspace> {
  expectStatus(await owner.signUp("bench-owner@example.com"), 200);
  const workspaceId = expectStatus(await owner.post("/v1/workspaces", { name: "Bench" }), 201).json
    .id as string;
  const apiKey = expectStatus(
    await owner.post(`/v1/workspaces/${workspaceId}/api-keys`, { name: "bench", role: "admin" }),
    201,
  ).json.key as string;
  const botIds: string[] = [];
  for (let i = 0; i < bots.private; i++) botIds.push((await createBot(owner, workspaceId, "private")).id);
  for (let i = 0; i < bots.team; i++) botIds.push((await createBot(owner, workspaceId, "team")).id);
  const holder = new SessionClient({ client: keyCaller, apiKey }, workspaceId);
  const sessions: OpenedSession[] = [];
  for (const botId of botIds) {
    const session = await holder.opened(botId);
    expectStatus(await holder.write(session, NOTES_FILE, `notes of ${botId}\n`), 204);
    sessions.push(session);
  }
  return {
    workspaceId,
    apiKey,
    computerIds: [...new Set(sessions.map((session) => session.computerId))],
    sessions,
    holder,
  };
}
