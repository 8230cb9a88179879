import type { Computer, ComputerEgressRefusalsTable, EgressAuditWindow } from "@cubicle/db";
import type { EgressRefusal } from "@cubicle/providers/contract";
import { type Selectable, sql } from "kysely";
import { SYSTEM_ACTOR } from "../audit/audit-log.ts";
import type { ComputerDeps } from "../computers/lifecycle.ts";
import { machineOfRecord } from "../computers/repository.ts";
import type { ApiEnv } from "../config/env.ts";
import type { PeriodicJob } from "../housekeeping/periodic-job.ts";
import type { Logger } from "../observability/logger.ts";
import type { Metrics } from "../observability/metrics.ts";

type RefusalState = Selectable<ComputerEgressRefusalsTable>;
type Windows = Record<string, EgressAuditWindow>;

interface RefusedEntry {
  destination: EgressAuditWindow["destination"];
  /** The refusals of the destination this entry stands for: itself and those folded into it. */
  count: number;
  firstAt: string;
  lastAt: string;
}

type JobDeps = ComputerDeps & { env: ApiEnv; logger: Logger; metrics: Metrics };

/**
 * Every SANDBOX_EGRESS_POLL_MS, asks each running computer's provider what its egress policy
 * refused since the last read, counts it (the computer's refusedTotal and the
 * cubicle_computer_egress_refused_total metric) and audits it as `computer.egress_refused`: at most
 * one entry per computer and destination per SANDBOX_EGRESS_AUDIT_WINDOW_MS, carrying how many
 * refusals it stands for, so a bot hammering one address cannot flood the audit log, yet every
 * refusal is counted in some entry (those folded are written when the window ends). Cursors and
 * windows live in the database, as the job moves between replicas with its lock.
 */
export function egressRefusalJob(deps: JobDeps): PeriodicJob {
  return {
    name: "egress-refusals",
    everyMs: deps.env.sandbox.egressPollMs,
    async run() {
      const { db } = deps.database;
      const running = await db
        .selectFrom("computers")
        .selectAll()
        .where("state", "=", "running")
        .where("provider_ref", "is not", null)
        .execute();
      for (const computer of running) {
        try {
          await readRefusals(deps, computer);
        } catch (error) {
          deps.logger.warn(
            { err: error, computerId: computer.id },
            "could not read a computer's egress refusals",
          );
        }
      }
      // folded refusals of computers no longer running still get their entry when their window ends
      const others = await db
        .selectFrom("computer_egress_refusals")
        .selectAll()
        .where(sql<boolean>`windows <> '{}'::jsonb`)
        .$if(running.length > 0, (q) =>
          q.where(
            "computer_id",
            "not in",
            running.map((c) => c.id),
          ),
        )
        .execute();
      for (const state of others) await save(deps, state, { windows: state.windows, entries: [] });
    },
  };
}

async function readRefusals(deps: JobDeps, computer: Computer): Promise<void> {
  const machine = await machineOfRecord(deps, computer);
  if (!machine?.provider.egressReport || machine.ref.providerRef === null) return;
  const state = await deps.database.db
    .selectFrom("computer_egress_refusals")
    .selectAll()
    .where("computer_id", "=", computer.id)
    .executeTakeFirst();
  // a cursor and a running total belong to one machine: a new machine starts both over
  const same = state?.machine_ref === machine.ref.providerRef;
  const report = await machine.provider.egressReport(machine.ref, same ? (state?.cursor ?? null) : null);
  // a computer whose policy never refused anything has no row: nothing is written every round
  if (!state && report.refusedTotal === 0 && report.refusals.length === 0) return;
  const seenBefore = same ? (state?.machine_total ?? 0) : 0;
  const added = report.refusedTotal >= seenBefore ? report.refusedTotal - seenBefore : report.refusedTotal;
  const windows = structuredClone(state?.windows ?? {});
  const entries = fold(windows, report.refusals, deps.env.sandbox.egressAuditWindowMs);
  const next: RefusalState = {
    computer_id: computer.id,
    workspace_id: computer.workspace_id,
    machine_ref: machine.ref.providerRef,
    cursor: report.cursor,
    machine_total: report.refusedTotal,
    refused_total: (state?.refused_total ?? 0) + added,
    windows,
    updated_at: new Date(),
  };
  const unchanged =
    state !== undefined &&
    same &&
    state.cursor === next.cursor &&
    state.machine_total === next.machine_total &&
    added === 0 &&
    entries.length === 0;
  if (unchanged && !flushable(windows, deps.env.sandbox.egressAuditWindowMs)) return;
  await save(deps, next, { windows, entries });
  if (added > 0)
    deps.metrics.egressRefused.inc({ workspace: computer.workspace_id, computer: computer.id }, added);
}

/**
 * Takes new refusals into the windows: a destination not audited within the window gets an entry
 * now (with what was folded before it), the others are folded into their window. Returns the entries.
 */
function fold(windows: Windows, refusals: EgressRefusal[], windowMs: number): RefusedEntry[] {
  const now = Date.now();
  const entries: RefusedEntry[] = [];
  for (const refusal of refusals) {
    const destination = { address: refusal.address, port: refusal.port, protocol: refusal.protocol };
    const key = JSON.stringify(destination);
    const window = windows[key];
    if (!window || now - Date.parse(window.auditedAt) >= windowMs) {
      entries.push({
        destination,
        count: 1 + (window?.folded ?? 0),
        firstAt: window?.firstAt ?? refusal.at,
        lastAt: refusal.at,
      });
      windows[key] = {
        destination,
        auditedAt: new Date(now).toISOString(),
        folded: 0,
        firstAt: null,
        lastAt: null,
      };
    } else {
      window.folded++;
      window.firstAt ??= refusal.at;
      window.lastAt = refusal.at;
    }
  }
  return entries;
}

const ended = (window: EgressAuditWindow, windowMs: number) =>
  Date.now() - Date.parse(window.auditedAt) >= windowMs;

const flushable = (windows: Windows, windowMs: number) =>
  Object.values(windows).some((window) => ended(window, windowMs));

/**
 * Writes the new entries, an entry for each window that ended with refusals folded in it, and the
 * state without the windows that ended empty, in one transaction.
 */
async function save(
  deps: JobDeps,
  state: RefusalState,
  { windows, entries }: { windows: Windows; entries: RefusedEntry[] },
): Promise<void> {
  const windowMs = deps.env.sandbox.egressAuditWindowMs;
  const kept: Windows = {};
  const all = [...entries];
  for (const [key, window] of Object.entries(windows)) {
    if (!ended(window, windowMs)) kept[key] = window;
    else if (window.folded > 0 && window.firstAt && window.lastAt) {
      const { destination, folded: count, firstAt, lastAt } = window;
      all.push({ destination, count, firstAt, lastAt });
      kept[key] = {
        destination,
        auditedAt: new Date().toISOString(),
        folded: 0,
        firstAt: null,
        lastAt: null,
      };
    }
  }
  await deps.database.db.transaction().execute(async (trx) => {
    for (const entry of all)
      await deps.audit.record(
        {
          actor: SYSTEM_ACTOR,
          workspaceId: state.workspace_id,
          action: "computer.egress_refused",
          target: { type: "computer", id: state.computer_id },
          data: { ...entry },
        },
        trx,
      );
    const row = {
      machine_ref: state.machine_ref,
      cursor: state.cursor,
      machine_total: state.machine_total,
      refused_total: state.refused_total,
      windows: JSON.stringify(kept),
      updated_at: new Date(),
    };
    await trx
      .insertInto("computer_egress_refusals")
      .values({ computer_id: state.computer_id, workspace_id: state.workspace_id, ...row })
      .onConflict((oc) => oc.column("computer_id").doUpdateSet(row))
      .execute();
  });
}
