import type { Database, DatabaseHandle } from "@cubicle/db";
import { SCREEN_PATH, SCREEN_PROTOCOL } from "@cubicle/proxy/capability";
import { type Kysely, sql } from "kysely";
import { WebSocket } from "ws";
import type { ApiEnv } from "../config/env.ts";
import type { PeriodicJob } from "../housekeeping/periodic-job.ts";
import type { Logger } from "../observability/logger.ts";
import { isUniqueViolation } from "../sessions/leases.ts";
import { discardPendingRecording } from "./catalogue.ts";
import { mintSessionRecorder, type RecordedSession, type RecorderDeps } from "./recorders.ts";

/** How often a replica checks that the sessions it records are still open. */
const FOLLOW_EVERY_MS = 2_000;
/** How often some replica looks for recorded sessions nobody records (a replica died, a proxy restarted). */
export const SESSION_RECORDING_SWEEP_MS = 5_000;

/**
 * Bots' screens recorded during their sessions, on workspaces whose policy is
 * `control-and-sessions`. The api opens a `record` socket to the proxy for the session's screen; the
 * proxy is the viewer and records what the screen sends, so nothing depends on a person watching.
 * The socket is this replica's: it closes it when the session ends (the proxy then ends the
 * recording complete), and a replica or proxy that goes away ends it incomplete, after which the
 * sweep starts a new recording for the rest of the session.
 */
export class SessionRecorders {
  readonly #sockets = new Map<string, WebSocket>();
  readonly #starting = new Set<string>();
  readonly #timer: NodeJS.Timeout;

  constructor(private readonly deps: RecorderDeps & { env: ApiEnv; logger: Logger }) {
    this.#timer = setInterval(() => void this.#follow(), FOLLOW_EVERY_MS);
    this.#timer.unref();
  }

  /** Starts recording the session if its workspace records sessions and nobody records it yet; never throws. */
  start(sessionId: string): void {
    if (this.#sockets.has(sessionId) || this.#starting.has(sessionId)) return;
    this.#starting.add(sessionId);
    this.#open(sessionId)
      .catch((error: unknown) =>
        this.deps.logger.warn({ err: error, session: sessionId }, "could not start a session recording"),
      )
      .finally(() => this.#starting.delete(sessionId));
  }

  /** Sessions this replica records now (for health and tests). */
  get recording(): number {
    return this.#sockets.size;
  }

  /** Ends every recording this replica holds, complete: the api is shutting down, not failing. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    const closing = [...this.#sockets.values()].map(
      (socket) =>
        new Promise<void>((resolve) => {
          socket.once("close", () => resolve());
          socket.close(1000, "api shutting down");
          setTimeout(resolve, 2_000).unref();
        }),
    );
    this.#sockets.clear();
    await Promise.all(closing);
  }

  async #open(sessionId: string): Promise<void> {
    const db = this.deps.database.db;
    const [session] = await recordableSessions(db, sessionId);
    if (!session) return;
    let started: Awaited<ReturnType<typeof mintSessionRecorder>>;
    try {
      started = await mintSessionRecorder(this.deps, session);
    } catch (error) {
      // another replica began recording this session a moment ago
      if (isUniqueViolation(error)) return;
      throw error;
    }
    const url = `${this.deps.env.screens.proxyInternalUrl}${SCREEN_PATH}`;
    const socket = new WebSocket(url, [SCREEN_PROTOCOL, started.token], { perMessageDeflate: false });
    const opened = await new Promise<boolean>((resolve) => {
      socket.once("open", () => resolve(true));
      socket.once("unexpected-response", () => resolve(false));
      socket.once("error", () => resolve(false));
    });
    if (!opened) {
      socket.terminate();
      // the proxy never took it, so nothing was recorded: the row goes, and the sweep tries again
      await discardPendingRecording(db, started.recordingId);
      throw new Error(`the proxy at ${url} refused or could not be reached for a record socket`);
    }
    socket.on("error", () => undefined);
    socket.once("close", () => {
      if (this.#sockets.get(sessionId) === socket) this.#sockets.delete(sessionId);
    });
    this.#sockets.set(sessionId, socket);
  }

  /** Closes the sockets of sessions that ended, or whose workspace stopped recording sessions. */
  async #follow(): Promise<void> {
    if (this.#sockets.size === 0) return;
    try {
      const live = new Set(
        (await recordableSessions(this.deps.database.db, ...this.#sockets.keys())).map((s) => s.id),
      );
      for (const [sessionId, socket] of this.#sockets) {
        if (live.has(sessionId)) continue;
        this.#sockets.delete(sessionId);
        socket.close(1000, "session ended");
      }
    } catch (error) {
      this.deps.logger.warn({ err: error }, "could not check the recorded sessions; checking again shortly");
    }
  }
}

/** Starts recordings for recorded sessions that have none live: after a crash, a restart, a policy change. */
export function sessionRecordingJob(deps: {
  database: DatabaseHandle;
  sessionRecorders: SessionRecorders;
}): PeriodicJob {
  return {
    name: "session-recordings",
    everyMs: SESSION_RECORDING_SWEEP_MS,
    async run() {
      const db = deps.database.db;
      const unrecorded = await recordableSessionsQuery(db)
        .where(({ not, exists, selectFrom }) =>
          not(
            exists(
              selectFrom("recordings")
                .select(sql`1`.as("one"))
                .whereRef("recordings.session_id", "=", "execution_leases.id")
                .where("recordings.status", "in", ["pending", "recording"]),
            ),
          ),
        )
        .execute();
      for (const session of unrecorded) deps.sessionRecorders.start(session.id);
    },
  };
}

function recordableSessionsQuery(db: Kysely<Database>) {
  return db
    .selectFrom("execution_leases")
    .innerJoin("screen_leases", "screen_leases.execution_lease_id", "execution_leases.id")
    .innerJoin(
      "workspace_recording_policies",
      "workspace_recording_policies.workspace_id",
      "execution_leases.workspace_id",
    )
    .where("execution_leases.status", "=", "open")
    .where("execution_leases.expires_at", ">", sql<Date>`now()`)
    .where("workspace_recording_policies.mode", "=", "control-and-sessions")
    .select([
      "execution_leases.id",
      "execution_leases.workspace_id",
      "execution_leases.computer_id",
      "execution_leases.bot_id",
      "screen_leases.screen_index",
    ]);
}

function recordableSessions(db: Kysely<Database>, ...ids: string[]): Promise<RecordedSession[]> {
  return recordableSessionsQuery(db).where("execution_leases.id", "in", ids).execute();
}
