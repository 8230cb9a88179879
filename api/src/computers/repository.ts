import type { Computer, Database } from "@cubicle/db";
import { PROVIDER_KINDS, reusableRef } from "@cubicle/providers";
import {
  type MachineRef,
  ProviderError,
  type ProviderKind,
  type SandboxProvider,
} from "@cubicle/providers/contract";
import type { Kysely } from "kysely";
import { notFound } from "../http/problem.ts";
import type { Sandbox } from "../sandbox/sandbox.ts";

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
    providerRef: reusableRef(provider, { kind: computer.provider_kind, ref: computer.provider_ref }),
  };
}

export interface Machine {
  provider: SandboxProvider;
  ref: MachineRef;
}

/** The computer's machine as the provider in effect now sees it. */
export async function machineOf(deps: { sandbox: Sandbox }, computer: Computer): Promise<Machine> {
  const provider = await deps.sandbox.current();
  return { provider, ref: machineRefOf(computer, provider) };
}

/**
 * The machine a record points at, on the provider kind that made it (stop, destroy and
 * checkpoints go there), or null when it has none.
 */
export async function machineOfRecord(
  deps: { sandbox: Sandbox },
  computer: Computer,
): Promise<Machine | null> {
  if (computer.provider_ref === null) return null;
  const kind = computer.provider_kind as ProviderKind;
  if (!PROVIDER_KINDS.includes(kind)) return null;
  let provider: SandboxProvider;
  try {
    provider = await deps.sandbox.provider(kind);
  } catch (error) {
    throw new ProviderError(
      "PROVIDER_FAILURE",
      `the ${kind} provider that made this computer's machine is not available: ${(error as Error).message}`,
      { cause: error },
    );
  }
  return {
    provider,
    ref: {
      homeKey: computer.home_key,
      computerId: computer.id,
      workspaceId: computer.workspace_id,
      providerRef: computer.provider_ref,
    },
  };
}
