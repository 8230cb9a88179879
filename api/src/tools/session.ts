import type { Computer } from "@cubicle/db";
import { type Launched, type LaunchRequest, ProviderError } from "@cubicle/providers/contract";
import type { Context } from "hono";
import { actorOf } from "../auth/principal.ts";
import { ensureRunning, touchComputer } from "../computers/lifecycle.ts";
import { type Machine, machineOf } from "../computers/repository.ts";
import type { AppEnv } from "../context.ts";
import { HttpProblem } from "../http/problem.ts";
import { holds, notHolder, requireCurrent, requireSession } from "../sessions/access.ts";
import type { SessionView } from "../sessions/leases.ts";
import { type SessionPaths, sessionPaths } from "./paths.ts";

/** A live session of the caller's, with its running machine: what every tool works on. */
export interface ToolSession {
  session: SessionView;
  computer: Computer;
  /** Replaced when `use` had to resume the computer. */
  machine: Machine;
  paths: SessionPaths;
  /**
   * Runs provider work (which reads `machine` when it runs). When the machine turns out stopped
   * or gone although the record said running, the computer is started and the work runs again.
   */
  use<T>(work: () => Promise<T>): Promise<T>;
  /** Audits a change the tool made, naming the session, its bot, computer and fence. */
  audit(action: string, data?: Record<string, unknown>): Promise<void>;
}

/**
 * Checks the caller holds the session and carries its current fence, then makes sure the
 * computer runs (resuming it when it was suspended) and counts the call as activity. A record
 * that says running is trusted (every provider call checks the machine anyway) until the
 * provider says otherwise; see `use`.
 */
export async function toolSession(
  c: Context<AppEnv>,
  ids: { botId: string; sessionId: string },
  fence: number,
): Promise<ToolSession> {
  const deps = c.var.deps;
  const db = deps.database.db;
  const session = await requireSession(db, c.var.workspace.workspaceId, ids.botId, ids.sessionId);
  if (!holds(c.var.principal, session)) throw notHolder(session);
  await requireCurrent(db, session, fence);
  const record = await db
    .selectFrom("computers")
    .selectAll()
    .where("id", "=", session.computer_id)
    .executeTakeFirstOrThrow();
  const actor = actorOf(c.var.principal);
  let current: { computer: Computer; machine: Machine };
  const trusted = record.state === "running" ? await machineOf(deps, record) : null;
  if (trusted && trusted.ref.providerRef !== null) {
    await touchComputer(deps, record.id);
    current = { computer: record, machine: trusted };
  } else current = await ensureRunning(deps, record, actor);

  const tool: ToolSession = {
    session,
    computer: current.computer,
    machine: current.machine,
    paths: sessionPaths(current.computer, session.bot_id),
    async use(work) {
      try {
        return await work();
      } catch (error) {
        if (!(error instanceof ProviderError) || !MACHINE_GONE.includes(error.code)) throw error;
        const latest = await db
          .selectFrom("computers")
          .selectAll()
          .where("id", "=", session.computer_id)
          .executeTakeFirstOrThrow();
        const resumed = await ensureRunning(deps, latest, actor);
        tool.computer = resumed.computer;
        tool.machine = resumed.machine;
        return work();
      }
    },
    audit: (action, data = {}) =>
      deps.audit.record({
        actor,
        workspaceId: session.workspace_id,
        action,
        target: { type: "session", id: session.id },
        data: { botId: session.bot_id, computerId: session.computer_id, fence: session.fence, ...data },
      }),
  };
  return tool;
}

/** What a provider says when the machine a running record names is not running after all. */
export const MACHINE_GONE: readonly string[] = ["MACHINE_STOPPED", "MACHINE_MISSING"];

/** The session's screen for a graphical tool, or the reason there is none. */
export function screenOf(tool: ToolSession): number {
  if (!tool.machine.provider.capabilities.graphical)
    throw new ProviderError(
      "GRAPHICAL_UNAVAILABLE",
      "this computer has no screen; shell and file tools work",
    );
  if (tool.session.screen_index === null) {
    throw new HttpProblem(
      409,
      "MULTI_SCREEN_UNAVAILABLE",
      "No screen was free on this computer when the session opened, so graphical tools are unavailable " +
        "to it; shell and file tools work. End the session and open a new one once a screen is free.",
    );
  }
  return tool.session.screen_index;
}

/**
 * Starts an app, URL or path on the session's screen through its provider. A Team bot's apps start
 * in its folder, and its browser keeps its own profile there.
 */
export function launch(tool: ToolSession, screen: number, request: LaunchRequest): Promise<Launched> {
  const options = { cwd: tool.paths.start, browserHome: tool.paths.start };
  return tool.use(() => tool.machine.provider.launch(tool.machine.ref, screen, request, options));
}
