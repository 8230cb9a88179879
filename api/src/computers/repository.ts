import type { Computer, Database } from "@cubicle/db";
import type { MachineRef, SandboxProvider } from "@cubicle/providers/contract";
import type { Kysely } from "kysely";
import type { AppDeps } from "../context.ts";
import { notFound } from "../http/problem.ts";

export function findComputer(
  db: Kysely<Database>,
  workspaceId: string,
  computerId: string,
): Promise<Computer | undefined> {
  return db
    .selectFrom("computers")
    .selectAll()
    .where("id", "=", computerId)
    .where("workspace_id", "=", workspaceId)
    .executeTakeFirst();
}

/** Another workspace's computer answers exactly like a missing one. */
export async function requireComputer(
  db: Kysely<Database>,
  workspaceId: string,
  computerId: string,
): Promise<Computer> {
  const computer = await findComputer(db, workspaceId, computerId);
  if (!computer) throw notFound("computer");
  return computer;
}

export function machineRefOf(computer: Computer, provider: SandboxProvider): MachineRef {
  return {
    homeKey: computer.home_key,
    computerId: computer.id,
    workspaceId: computer.workspace_id,
    // A providerRef is only meaningful to the kind of provider that issued it (DESIGN §2).
    providerRef: computer.provider_kind === provider.kind ? computer.provider_ref : null,
  };
}

export interface Machine {
  provider: SandboxProvider;
  ref: MachineRef;
}

/** The computer's machine as the provider in effect now sees it. */
export async function machineOf(deps: Pick<AppDeps, "sandbox">, computer: Computer): Promise<Machine> {
  const provider = await deps.sandbox.current();
  return { provider, ref: machineRefOf(computer, provider) };
}
