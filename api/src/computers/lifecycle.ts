import type { Bot, Computer, ComputerState, Database, DatabaseHandle } from "@cubicle/db";
import { KeyedLock } from "@cubicle/host/keyed-lock";
import { ProviderError } from "@cubicle/providers/contract";
import { type Kysely, type RawBuilder, sql } from "kysely";
import { type AuditActor, type AuditLog, SYSTEM_ACTOR } from "../audit/audit-log.ts";
import { applyToMachine } from "../egress/apply.ts";
import { policyOfComputer } from "../egress/policy.ts";
import { HttpProblem } from "../http/problem.ts";
import type { Sandbox } from "../sandbox/sandbox.ts";
import { type Machine, machineOfRecord, machineRefOf } from "./repository.ts";

export type { AuditActor } from "../audit/audit-log.ts";

/**
 * The one place computers change state (docs/architecture.md, "Domain"). Every change is audited
 * in the transaction that makes it. Two guards keep one computer from being provisioned (or
 * stopped) twice at once: a per-computer lock in this process, and across api replicas a
 * compare-and-set of `state` to a transitional value (`booting`, `suspending`) that only one
 * caller can win; the others wait for it to settle. A transition whose owner died is taken over
 * once it is TRANSITION_STALE_MS old.
 */

/**
 * What checkpoints do at a machine's turning points (the «Checkpoints» service implements it;
 * api/src/checkpoints/). Kept as a seam so that the lifecycle knows when, not how.
 */
export interface MachineCheckpoints {
  /**
   * A provider made a new machine (a first start, a machine that went missing, a changed
   * provider): put the home back from `revisionId`, or from the latest revision, before the
   * computer is marked running and anyone uses it. A failure fails the start (`error`).
   */
  restoreFresh(fresh: MachineMoment & { revisionId?: string }): Promise<void>;
  /** The machine has just stopped (its browsers closed gracefully): record the home. Never throws. */
  afterStop(stopped: MachineMoment & { reason: StopReason }): Promise<void>;
  /** The stopped machine is about to be removed: record the home; a failure refuses the removal. */
  beforeDestroy(doomed: MachineMoment): Promise<void>;
  /**
   * Runs `task` (stopping or removing the machine) once no checkpoint or restore of the computer
   * is using its machine, and keeps them out until it ends. A session's end checkpoints in the
   * background: a machine paused under that export would freeze its stream, and the checkpoint
   * and every later stop would wait for it forever.
   */
  exclusive<T>(computerId: string, task: () => Promise<T>): Promise<T>;
}

export interface MachineMoment {
  computer: Computer;
  machine: Machine;
  actor: AuditActor;
}

export interface ComputerDeps {
  database: DatabaseHandle;
  sandbox: Sandbox;
  audit: AuditLog;
  checkpoints?: MachineCheckpoints;
}

/** manual: asked to; idle: unused for SANDBOX_IDLE_MS; found-stopped: the provider had stopped it already. */
export type StopReason = "manual" | "idle" | "found-stopped";

const TRANSITIONAL: readonly ComputerState[] = ["booting", "suspending"];
/** A transition older than this is presumed abandoned (its api process died) and may be taken over. */
const TRANSITION_STALE_MS = 5 * 60_000;
/** How long a caller waits for another replica's transition before answering 409. */
const TRANSITION_WAIT_MS = 2 * 60_000;
const TRANSITION_POLL_MS = 200;

export const teamScopeKey = (workspaceId: string) => `team:${workspaceId}`;
export const botScopeKey = (botId: string) => `bot:${botId}`;

/** The workspace's Team Computer; the record is made on first use, stopped. */
export function teamComputer(deps: ComputerDeps, workspaceId: string): Promise<Computer> {
  return computerOfScope(deps, {
    workspace_id: workspaceId,
    bot_id: null,
    scope_key: teamScopeKey(workspaceId),
    home_key: `team-${workspaceId}`,
  });
}

/**
 * The computer a bot works on in its current mode. A Private bot's computer (home key = bot id)
 * is never removed by switching to Team, so switching back finds the same record and home.
 */
export function computerForBot(deps: ComputerDeps, bot: Bot): Promise<Computer> {
  if (bot.computer_mode === "team") return teamComputer(deps, bot.workspace_id);
  return computerOfScope(deps, {
    workspace_id: bot.workspace_id,
    bot_id: bot.id,
    scope_key: botScopeKey(bot.id),
    home_key: bot.id,
  });
}

interface Scope {
  workspace_id: string;
  bot_id: string | null;
  scope_key: string;
  home_key: string;
}

/** Race-safe: concurrent callers insert at most one row (scope_key is unique) and all read it. */
async function computerOfScope(deps: ComputerDeps, scope: Scope): Promise<Computer> {
  const db = deps.database.db;
  const existing = await byScope(db, scope.scope_key);
  if (existing) return existing;
  // Asked before the transaction: PGlite has one connection, which the transaction holds.
  const provider = await deps.sandbox.current();
  await db.transaction().execute(async (trx) => {
    const created = await trx
      .insertInto("computers")
      .values({ ...scope, provider_kind: provider.kind, state: "stopped" })
      // No conflict target: every unique index arbitrates. With `(scope_key)` alone, a racing
      // insert can still fail on home_key's index before it sees the other scope_key.
      .onConflict((oc) => oc.doNothing())
      .returningAll()
      .executeTakeFirst();
    if (created)
      await audited(deps, trx, SYSTEM_ACTOR, "computer.created", created, { scope: scope.scope_key });
  });
  const row = await byScope(db, scope.scope_key);
  // Only if another scope holds this home key, which the keys' shapes rule out.
  if (!row)
    throw new Error(`no computer of scope ${scope.scope_key}, and home key ${scope.home_key} is taken`);
  return row;
}

const byScope = (db: Kysely<Database>, scopeKey: string) =>
  db.selectFrom("computers").selectAll().where("scope_key", "=", scopeKey).executeTakeFirst();

/**
 * Makes sure the computer's machine runs on the provider in effect now, and returns it. A record
 * that says running and a provider that agrees only get their activity touched. Otherwise the
 * provider provisions: it resumes the same machine when the stored providerRef still works for
 * the same provider kind, else makes a fresh one, whose home is restored from the latest checkpoint
 * (or `restoreRevisionId`). Either way the machine is given the computer's egress policy first.
 */
export function ensureRunning(
  deps: ComputerDeps,
  computer: Computer,
  actor: AuditActor,
  options: { restoreRevisionId?: string } = {},
): Promise<{ computer: Computer; machine: Machine }> {
  return lockOf(deps).run(computer.id, async () => {
    const db = deps.database.db;
    const provider = await deps.sandbox.current();
    const { row, from } = await claim(db, computer.id, "booting", async (current) => {
      if (current.state !== "running") return false;
      const ref = machineRefOf(current, provider);
      return ref.providerRef !== null && (await provider.status(ref)) === "running";
    });
    if (!row) {
      const touched = await touchedRow(db, computer.id);
      return { computer: touched, machine: { provider, ref: machineRefOf(touched, provider) } };
    }
    try {
      const ref = machineRefOf(row, provider);
      const provisioned = await provider.provision(ref);
      const machine: Machine = { provider, ref: { ...ref, providerRef: provisioned.providerRef } };
      // before anything runs on it or it is reported running: a fresh machine has no policy yet,
      // and a resumed one is given its current one (its workspace's may have changed meanwhile)
      await applyToMachine(machine, (await policyOfComputer(db, row)).policy);
      if (provisioned.fresh && deps.checkpoints) {
        await deps.checkpoints.restoreFresh({
          computer: row,
          machine,
          actor,
          ...(options.restoreRevisionId ? { revisionId: options.restoreRevisionId } : {}),
        });
      }
      const started = await settle(
        deps,
        row.id,
        {
          state: "running",
          provider_kind: provider.kind,
          provider_ref: provisioned.providerRef,
          touch: true,
        },
        actor,
        "computer.started",
        { fresh: provisioned.fresh, providerKind: provider.kind, from },
      );
      return { computer: started, machine: { provider, ref: machineRefOf(started, provider) } };
    } catch (error) {
      await failed(deps, row.id, actor, "computer.start_failed", provider.kind, error);
      throw error;
    }
  });
}

/**
 * Stops the machine (its home stays): `suspended` when stopped for idleness, `stopped` when
 * asked to, then checkpoints the stopped machine's home. The machine is the record's, on the
 * provider that made it, even if another provider is in effect now. Stopping what is already
 * stopped changes nothing and records nothing.
 */
export function stopComputer(
  deps: ComputerDeps,
  computer: Computer,
  actor: AuditActor,
  reason: StopReason,
  options: { onlyIf?: Condition } = {},
): Promise<Computer> {
  const target: ComputerState = reason === "idle" ? "suspended" : "stopped";
  return lockOf(deps).run(computer.id, async () => {
    const db = deps.database.db;
    const { row, from } = await claim(
      db,
      computer.id,
      "suspending",
      async (current) => current.state === target && (await statusOfRecord(deps, current)) !== "running",
      options.onlyIf,
    );
    if (!row) return requireRow(db, computer.id);
    const machine = await machineOfRecord(deps, row);
    try {
      const status = machine ? await machine.provider.status(machine.ref) : "missing";
      if (machine && status === "running")
        await withoutCheckpoints(deps, row.id, () => machine.provider.stop(machine.ref));
      if (machine && status !== "missing")
        await deps.checkpoints?.afterStop({ computer: row, machine, actor, reason });
      return await settle(deps, row.id, { state: target }, actor, "computer.stopped", {
        reason,
        providerKind: row.provider_kind,
        from,
      });
    } catch (error) {
      await failed(deps, row.id, actor, "computer.stop_failed", row.provider_kind, error);
      throw error;
    }
  });
}

/**
 * Brings a record that says `running` in line with a provider that says the machine is not (it
 * was killed, crashed, or removed behind Cubicle's back): the computer becomes `stopped` as after
 * any stop (the home checkpointed, audited `computer.stopped` with reason `found-stopped`). Does
 * nothing while the machine runs, or once the record changed since `seen` (a start that came in
 * meanwhile is not undone).
 */
export async function reconcileComputer(deps: ComputerDeps, seen: Computer): Promise<Computer> {
  if (seen.state !== "running") return seen;
  if ((await statusOfRecord(deps, seen)) === "running") return seen;
  // the column keeps microseconds, a Date only milliseconds
  const unchanged = sql<boolean>`computers.state = 'running' and date_trunc('milliseconds', computers.updated_at) = ${seen.updated_at}`;
  return stopComputer(deps, seen, SYSTEM_ACTOR, "found-stopped", { onlyIf: unchanged });
}

/**
 * Removes the machine and forgets its providerRef; the computer record stays, `stopped`. The
 * machine is stopped and its home checkpointed first (unless the caller just did), so the fresh
 * machine of the next start is restored to exactly this home; if that checkpoint fails, nothing
 * is removed: the machine stays (stopped) and the computer shows `error` until the next start.
 */
export function destroyComputer(
  deps: ComputerDeps,
  computer: Computer,
  actor: AuditActor,
  options: { checkpointed?: boolean } = {},
): Promise<Computer> {
  return lockOf(deps).run(computer.id, async () => {
    const db = deps.database.db;
    const { row, from } = await claim(
      db,
      computer.id,
      "suspending",
      async (current) => current.provider_ref === null && current.state === "stopped",
    );
    if (!row) return requireRow(db, computer.id);
    const machine = await machineOfRecord(deps, row);
    try {
      const status = machine ? await machine.provider.status(machine.ref) : "missing";
      if (machine && status !== "missing" && !options.checkpointed && deps.checkpoints) {
        if (status === "running")
          await withoutCheckpoints(deps, row.id, () => machine.provider.stop(machine.ref));
        // a failure lands below: the machine stays, the computer shows `error` with the reason
        await deps.checkpoints.beforeDestroy({ computer: row, machine, actor });
      }
      if (machine) await withoutCheckpoints(deps, row.id, () => machine.provider.destroy(machine.ref));
      return await settle(
        deps,
        row.id,
        { state: "stopped", provider_ref: null },
        actor,
        "computer.destroyed",
        {
          providerKind: row.provider_kind,
          providerRef: row.provider_ref,
          from,
        },
      );
    } catch (error) {
      await failed(deps, row.id, actor, "computer.destroy_failed", row.provider_kind, error);
      throw error;
    }
  });
}

/**
 * Marks use of the computer (tool calls, session heartbeats, screen use): idle time starts over,
 * and a provider whose vendor pauses unused machines by itself is told the machine is in use, so
 * only Cubicle's idle job (which takes a checkpoint first) suspends a computer. That notice is
 * best effort and not waited for: the use goes on whether or not the vendor heard it.
 */
export async function touchComputer(
  deps: Pick<ComputerDeps, "database" | "sandbox">,
  computerId: string,
): Promise<void> {
  const row = await deps.database.db
    .updateTable("computers")
    .set({ last_activity_at: sql`now()` })
    .where("id", "=", computerId)
    .returningAll()
    .executeTakeFirst();
  if (row?.state !== "running") return;
  void machineOfRecord(deps, row)
    .then((machine) => machine?.provider.keepAlive?.(machine.ref))
    .catch(() => undefined);
}

// ---------------------------------------------------------------------------------------------

/**
 * A condition on the `computers` row, checked by the database in the same statement that claims
 * it (so nothing can change it in between): e.g. "still idle" for a suspension.
 */
export type Condition = RawBuilder<boolean>;

/**
 * Wins the computer for a transition: compare-and-set of its state to `transitional`. Returns no
 * row when `settled` says nothing needs doing, or when `onlyIf` no longer holds. While someone
 * else's transition runs, waits.
 */
async function claim(
  db: Kysely<Database>,
  computerId: string,
  transitional: ComputerState,
  settled: (current: Computer) => Promise<boolean>,
  onlyIf?: Condition,
): Promise<{ row: Computer | undefined; from: ComputerState }> {
  const deadline = Date.now() + TRANSITION_WAIT_MS;
  for (;;) {
    const current = await requireRow(db, computerId);
    if (!TRANSITIONAL.includes(current.state) && (await settled(current)))
      return { row: undefined, from: current.state };
    const won = await db
      .updateTable("computers")
      .set({ state: transitional, state_detail: null, updated_at: sql`now()` })
      .where("id", "=", computerId)
      .where("state", "=", current.state)
      .where((eb) =>
        eb.or([
          eb("state", "not in", [...TRANSITIONAL]),
          eb(
            "updated_at",
            "<",
            sql<Date>`now() - cast(${TRANSITION_STALE_MS} as integer) * interval '1 millisecond'`,
          ),
        ]),
      )
      .$if(onlyIf !== undefined, (update) => update.where(onlyIf as Condition))
      .returningAll()
      .executeTakeFirst();
    if (won) return { row: won, from: current.state };
    if (onlyIf) {
      const holds = await db
        .selectFrom("computers")
        .select("id")
        .where("id", "=", computerId)
        .where(onlyIf)
        .executeTakeFirst();
      if (!holds) return { row: undefined, from: current.state };
    }
    if (Date.now() > deadline) {
      throw new HttpProblem(
        409,
        "COMPUTER_TRANSITIONING",
        `The computer is ${current.state} elsewhere and did not settle in time; try again.`,
      );
    }
    // Lost a race (retry at once), or another replica's transition runs (wait for it).
    if (TRANSITIONAL.includes(current.state)) await sleep(TRANSITION_POLL_MS);
  }
}

/** Ends a transition: the new state and its audit record commit together. */
function settle(
  deps: ComputerDeps,
  computerId: string,
  {
    touch,
    ...change
  }: {
    state: ComputerState;
    provider_kind?: string;
    provider_ref?: string | null;
    /** Also counts as activity (a start is a use). */
    touch?: boolean;
  },
  actor: AuditActor,
  action: string,
  data: Record<string, unknown>,
): Promise<Computer> {
  return deps.database.db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable("computers")
      .set({
        ...change,
        ...(touch ? { last_activity_at: sql<Date>`now()` } : {}),
        state_detail: null,
        updated_at: sql`now()`,
      })
      .where("id", "=", computerId)
      .returningAll()
      .executeTakeFirstOrThrow();
    await audited(deps, trx, actor, action, row, data);
    return row;
  });
}

/** A failed transition leaves the computer in `error`; the next start reconciles it. */
async function failed(
  deps: ComputerDeps,
  computerId: string,
  actor: AuditActor,
  action: string,
  providerKind: string,
  error: unknown,
): Promise<void> {
  const code = error instanceof ProviderError ? error.code : "INTERNAL";
  const detail = error instanceof Error ? error.message : String(error);
  try {
    await deps.database.db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable("computers")
        .set({ state: "error", state_detail: detail.slice(0, 500), updated_at: sql`now()` })
        .where("id", "=", computerId)
        .returningAll()
        .executeTakeFirstOrThrow();
      await audited(deps, trx, actor, action, row, { providerKind, code });
    });
  } catch {
    // The original failure is what the caller must hear about.
  }
}

function audited(
  deps: ComputerDeps,
  db: Kysely<Database>,
  actor: AuditActor,
  action: string,
  computer: Computer,
  data: Record<string, unknown>,
): Promise<void> {
  return deps.audit.record(
    {
      actor,
      workspaceId: computer.workspace_id,
      action,
      target: { type: "computer", id: computer.id },
      data: { ...data, state: computer.state },
    },
    db,
  );
}

async function statusOfRecord(deps: ComputerDeps, computer: Computer) {
  const machine = await machineOfRecord(deps, computer);
  return machine ? machine.provider.status(machine.ref) : "missing";
}

async function touchedRow(db: Kysely<Database>, computerId: string): Promise<Computer> {
  return db
    .updateTable("computers")
    .set({ last_activity_at: sql`now()` })
    .where("id", "=", computerId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

async function requireRow(db: Kysely<Database>, computerId: string): Promise<Computer> {
  return db.selectFrom("computers").selectAll().where("id", "=", computerId).executeTakeFirstOrThrow();
}

/** The machine stopped or removed with no checkpoint of it under way (MachineCheckpoints.exclusive). */
function withoutCheckpoints<T>(deps: ComputerDeps, computerId: string, task: () => Promise<T>): Promise<T> {
  return deps.checkpoints ? deps.checkpoints.exclusive(computerId, task) : task();
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Runs `task` while no lifecycle change of the computer runs in this process (nor another such
 * task): e.g. an egress policy applied to a machine that is not being provisioned at that moment.
 */
export function withComputerLock<T>(
  deps: ComputerDeps,
  computerId: string,
  task: () => Promise<T>,
): Promise<T> {
  return lockOf(deps).run(computerId, task);
}

// One lock per api instance (keyed by its Sandbox), so that several instances in one test
// process behave like separate replicas and rely on the database guard between them.
const locks = new WeakMap<object, KeyedLock>();
function lockOf(deps: ComputerDeps): KeyedLock {
  let lock = locks.get(deps.sandbox);
  if (!lock) {
    lock = new KeyedLock();
    locks.set(deps.sandbox, lock);
  }
  return lock;
}
