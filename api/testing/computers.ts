import type { Computer } from "@cubicle/db";
import { type Machine, machineRefOf } from "../src/computers/repository.ts";
import type { TestApi } from "./harness.ts";

/**
 * A running computer of the workspace, made the way the computer routes will make one (there are
 * none yet): a row for the current provider, provisioned, its providerRef stored. A Team Computer
 * unless `bot` names a bot to create and give a Private Computer.
 */
export async function createComputer(
  t: TestApi,
  workspaceId: string,
  options: { bot?: string } = {},
): Promise<Computer> {
  const db = t.database.db;
  const provider = await t.api.deps.sandbox.current();
  const bot = options.bot
    ? await db
        .insertInto("bots")
        .values({
          workspace_id: workspaceId,
          name: options.bot,
          charter_purpose: "tests screens",
          charter_boundary: "never leaves the test",
          computer_mode: "private",
        })
        .returning("id")
        .executeTakeFirstOrThrow()
    : undefined;
  const row = await db
    .insertInto("computers")
    .values({
      workspace_id: workspaceId,
      bot_id: bot?.id ?? null,
      scope_key: bot ? `bot:${bot.id}` : `team:${workspaceId}`,
      home_key: bot ? bot.id : `team-${workspaceId}`,
      provider_kind: provider.kind,
      state: "booting",
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  const { providerRef } = await provider.provision(machineRefOf(row, provider));
  return db
    .updateTable("computers")
    .set({ provider_ref: providerRef, state: "running", updated_at: new Date() })
    .where("id", "=", row.id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The computer's machine, to ask the provider directly what the API would get from it. */
export async function machineFor(t: TestApi, computer: Computer): Promise<Machine> {
  const provider = await t.api.deps.sandbox.current();
  return { provider, ref: machineRefOf(computer, provider) };
}

/** Removes one computer's machine: a suite's cleanup of the computer it made. */
export async function destroyMachine(t: TestApi, computer: Computer): Promise<void> {
  const { provider, ref } = await machineFor(t, computer);
  await provider.destroy(ref);
}

/** Removes the machine of every computer the api has a record of, best effort: a suite's cleanup. */
export async function destroyMachines(t: TestApi): Promise<void> {
  for (const computer of await t.database.db.selectFrom("computers").selectAll().execute()) {
    const { provider, ref } = await machineFor(t, computer);
    await provider.destroy(ref).catch(() => undefined);
  }
}
