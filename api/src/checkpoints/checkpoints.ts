import type { Checkpoint, CheckpointReason, Computer, Database, DatabaseHandle } from "@cubicle/db";
import { KeyedLock } from "@cubicle/host/keyed-lock";
import { ProviderError } from "@cubicle/providers/contract";
import type { Kysely } from "kysely";
import { type AuditActor, type AuditLog, SYSTEM_ACTOR } from "../audit/audit-log.ts";
import type { MachineCheckpoints, MachineMoment, StopReason } from "../computers/lifecycle.ts";
import { openSessions, screensControlled, screensInUse } from "../computers/occupancy.ts";
import { type Machine, machineOfRecord } from "../computers/repository.ts";
import { HttpProblem } from "../http/problem.ts";
import type { Logger } from "../observability/logger.ts";
import type { Sandbox } from "../sandbox/sandbox.ts";
import { failWhenIdle } from "./idle-bound.ts";
import { clearRetry, scheduleRetry } from "./retries.ts";
import {
  type CheckpointStore,
  CheckpointStoreError,
  type RetentionPolicy,
  selectForRemoval,
} from "./store/index.ts";

/** How long an export may send nothing before the checkpoint fails (and is retried later). */
const EXPORT_IDLE_MS = 120_000;

/** Where a restore puts a revision: the running machine, or a fresh one made for it. */
export type RestoreTarget = "current" | "fresh";

export interface CheckpointsDeps {
  database: DatabaseHandle;
  audit: AuditLog;
  logger: Logger;
  sandbox: Sandbox;
}

/**
 * Checkpoints of computers' homes (docs/architecture.md, "Domain"): when they are taken, what is
 * kept, how a revision comes back. Revisions live in the store (content-addressed, written
 * atomically); the database catalogs the complete ones, so a revision is listed only once it
 * exists whole.
 *
 * Browsers are the one part of a home that is not simply files: Chromium holds cookies in memory
 * and writes them lazily. A running machine in use has its browsers settled (not stopped) before
 * it is exported, one nobody uses has them closed gracefully; a stopping machine closes them
 * first; a restore closes them, since a running browser would write its old profile back over
 * the restored one.
 */
export class Checkpoints implements MachineCheckpoints {
  /** One checkpoint or restore of a computer at a time in this process. */
  private readonly lock = new KeyedLock();
  private readonly background = new Set<Promise<void>>();
  /** Session-end checkpoints waiting for their computer's turn: the latest reason wins. */
  private readonly waiting = new Map<string, { reason: CheckpointReason; actor: AuditActor }>();

  constructor(
    private readonly deps: CheckpointsDeps,
    readonly store: CheckpointStore,
    private readonly retention: RetentionPolicy,
  ) {}

  /** The computer's revisions, newest first. */
  list(computerId: string): Promise<Checkpoint[]> {
    return this.db
      .selectFrom("checkpoints")
      .selectAll()
      .where("computer_id", "=", computerId)
      .orderBy("created_at", "desc")
      .orderBy("id", "desc")
      .execute();
  }

  /** One revision of the computer; another computer's answers 404 like a missing one. */
  async require(computerId: string, checkpointId: string): Promise<Checkpoint> {
    const row = await this.db
      .selectFrom("checkpoints")
      .selectAll()
      .where("computer_id", "=", computerId)
      .where("id", "=", checkpointId)
      .executeTakeFirst();
    if (!row) throw new HttpProblem(404, "NOT_FOUND", "No such checkpoint of this computer.");
    return row;
  }

  /** The revision as a tar of the home (paths relative to it). */
  archive(computer: Computer, checkpoint: Checkpoint): Promise<ReadableStream<Uint8Array>> {
    return this.store.read(computer.home_key, checkpoint.id);
  }

  /** Records the computer's home now. Fails (audited as `checkpoint.failed`) when it cannot. */
  take(moment: MachineMoment & { reason: CheckpointReason }): Promise<Checkpoint> {
    return this.lock.run(moment.computer.id, () => this.record(moment));
  }

  /** A `manual` checkpoint of the computer's machine, running or stopped. */
  async takeNow(computer: Computer, actor: AuditActor): Promise<Checkpoint> {
    const machine = await machineOfRecord(this.deps, computer);
    if (!machine) throw noMachine();
    return this.take({ computer, machine, actor, reason: "manual" });
  }

  /** Like take, but a failure is audited and retried later instead of thrown. */
  takeOrRetry(moment: MachineMoment & { reason: CheckpointReason }): Promise<Checkpoint | null> {
    return this.lock.run(moment.computer.id, () => this.recordOrRetry(moment));
  }

  private async recordOrRetry(
    moment: MachineMoment & { reason: CheckpointReason },
  ): Promise<Checkpoint | null> {
    try {
      return await this.record(moment);
    } catch (error) {
      await scheduleRetry(this.db, moment.computer, moment.reason, describe(error)).catch((failure) =>
        this.deps.logger.error({ err: failure }, "could not schedule a checkpoint retry"),
      );
      return null;
    }
  }

  /**
   * A session ended: record its computer's home in the background (the session's answer does not
   * wait, and a checkpoint failure never turns a successful session into a failed one). Session
   * ends that arrive while one waits its turn share it: eight Team bots finishing together cost
   * one checkpoint, with the latest session's reason.
   */
  afterSession(session: { computerId: string; outcome: "success" | "failure"; actor: AuditActor }): void {
    const reason = session.outcome === "success" ? "session-success" : "session-failure";
    const waiting = this.waiting.has(session.computerId);
    this.waiting.set(session.computerId, { reason, actor: session.actor });
    if (waiting) return;
    const work = this.lock
      .run(session.computerId, async () => {
        const next = this.waiting.get(session.computerId);
        this.waiting.delete(session.computerId);
        const computer = await this.db
          .selectFrom("computers")
          .selectAll()
          .where("id", "=", session.computerId)
          .executeTakeFirst();
        const machine = computer ? await machineOfRecord(this.deps, computer) : null;
        if (!next || !computer || !machine) return;
        await this.recordOrRetry({ computer, machine, ...next });
      })
      .catch((error: unknown) =>
        this.deps.logger.error(
          { err: error, computerId: session.computerId },
          "session-end checkpoint failed",
        ),
      );
    this.background.add(work);
    void work.finally(() => this.background.delete(work));
  }

  /** Waits for background checkpoints (session ends) to finish: the api is shutting down. */
  async drain(): Promise<void> {
    while (this.background.size > 0) await Promise.allSettled([...this.background]);
  }

  async afterStop({ reason, ...moment }: MachineMoment & { reason: StopReason }): Promise<void> {
    await this.takeOrRetry({ ...moment, reason: reason === "idle" ? "idle" : "stop" });
  }

  exclusive<T>(computerId: string, task: () => Promise<T>): Promise<T> {
    return this.lock.run(computerId, task);
  }

  async beforeDestroy(moment: MachineMoment): Promise<void> {
    await this.take({ ...moment, reason: "stop" });
  }

  restoreFresh({ revisionId, ...moment }: MachineMoment & { revisionId?: string }): Promise<void> {
    return this.lock.run(moment.computer.id, async () => {
      const revisions = await this.list(moment.computer.id);
      const target = revisionId ? revisions.find((r) => r.id === revisionId) : revisions[0];
      if (!target) {
        if (revisionId) throw new HttpProblem(404, "NOT_FOUND", "No such checkpoint of this computer.");
        return;
      }
      await this.replaceHome(moment, target, "fresh", [target, revisions[0]]);
    });
  }

  /**
   * Puts a revision back into the running machine: its browsers are closed and the home as it
   * was is kept as a `before-restore` revision first (api/src/restore/ decides where a restore goes).
   */
  restoreInto(moment: MachineMoment, checkpoint: Checkpoint): Promise<void> {
    return this.lock.run(moment.computer.id, () => this.replaceHome(moment, checkpoint, "current", []));
  }

  /** Keeps the home of a machine about to be replaced by a restore as a `before-restore` revision. */
  keepBeforeRestore(moment: MachineMoment): Promise<void> {
    return this.lock.run(moment.computer.id, async () => {
      await moment.machine.provider.closeBrowsers(moment.machine.ref);
      await this.record({ ...moment, reason: "before-restore" });
    });
  }

  // -------------------------------------------------------------------------------------------

  private get db(): Kysely<Database> {
    return this.deps.database.db;
  }

  /**
   * Closes the machine's browsers, keeps its home as a `before-restore` revision (dropped again
   * when it is empty or equals one of `sameAs`: a fresh machine's home usually is empty or the
   * latest revision), then imports the revision.
   */
  private async replaceHome(
    moment: MachineMoment,
    revision: Checkpoint,
    into: RestoreTarget,
    sameAs: (Checkpoint | undefined)[],
  ): Promise<void> {
    const { computer, machine, actor } = moment;
    await machine.provider.closeBrowsers(machine.ref);
    const before = await this.record({ ...moment, reason: "before-restore" }, sameAs);
    const tar = rememberingFailure(await this.store.read(computer.home_key, revision.id));
    try {
      await machine.provider.importHome(machine.ref, tar.stream);
    } catch (error) {
      // a revision that fails its checks (altered on disk, a key missing) says so, rather than
      // the provider's "the archive broke off"
      throw tar.failure() ?? error;
    }
    await this.audit(actor, computer, "checkpoint.restored", {
      checkpointId: revision.id,
      into,
      beforeRestoreId: before?.id ?? null,
    });
  }

  /**
   * Exports the home and stores it as a revision (browsers settled first when the machine runs),
   * catalogs it, clears a pending retry and applies retention. With `unlessSameAs`, a home with no
   * files, or equal to one of those revisions, is not kept and null is returned.
   */
  private async record(moment: MachineMoment & { reason: CheckpointReason }): Promise<Checkpoint>;
  private async record(
    moment: MachineMoment & { reason: CheckpointReason },
    unlessSameAs: (Checkpoint | undefined)[],
  ): Promise<Checkpoint | null>;
  private async record(
    { computer, machine, actor, reason }: MachineMoment & { reason: CheckpointReason },
    unlessSameAs?: (Checkpoint | undefined)[],
  ): Promise<Checkpoint | null> {
    try {
      const status = await machine.provider.status(machine.ref);
      if (status === "missing") throw noMachine();
      if (status === "running") await this.quiesceBrowsers(computer, machine);
      const parent = await this.db
        .selectFrom("checkpoints")
        .select("id")
        .where("computer_id", "=", computer.id)
        .orderBy("created_at", "desc")
        .orderBy("id", "desc")
        .executeTakeFirst();
      const { provider, ref } = machine;
      const info = await this.store.write({
        homeKey: computer.home_key,
        workspaceId: computer.workspace_id,
        parentId: parent?.id ?? null,
        reason,
        // read only where it may have changed since the parent revision, when the machine lists
        changes: {
          list: async () => (await provider.listHome?.(ref)) ?? null,
          read: async (paths) =>
            failWhenIdle(await provider.exportHome(ref, paths ? { paths } : undefined), EXPORT_IDLE_MS),
        },
      });
      if (
        unlessSameAs &&
        (info.fileCount === 0 || unlessSameAs.some((same) => same?.sha256 === info.sha256))
      ) {
        await this.store.remove(computer.home_key, [info.id]);
        return null;
      }
      const row = await this.db.transaction().execute(async (trx) => {
        const inserted = await trx
          .insertInto("checkpoints")
          .values({
            id: info.id,
            workspace_id: computer.workspace_id,
            computer_id: computer.id,
            parent_id: parent?.id ?? null,
            reason,
            size_bytes: info.sizeBytes,
            file_count: info.fileCount,
            sha256: info.sha256,
            new_bytes: info.newBytes,
            created_at: info.createdAt,
          })
          .returningAll()
          .executeTakeFirstOrThrow();
        await clearRetry(trx, computer.id);
        await this.audit(
          actor,
          computer,
          "checkpoint.created",
          {
            checkpointId: info.id,
            reason,
            sizeBytes: info.sizeBytes,
            fileCount: info.fileCount,
            newBytes: info.newBytes,
            sha256: info.sha256,
          },
          trx,
        );
        return inserted;
      });
      await this.prune(computer);
      return row;
    } catch (error) {
      await this.audit(actor, computer, "checkpoint.failed", {
        reason,
        code: codeOf(error),
        error: describe(error),
      }).catch(() => undefined);
      throw error;
    }
  }

  /**
   * Quiesce only what must be: while anyone uses the computer (an open session, a held screen, a
   * person's control) its browsers keep running and are waited for until they have written what
   * they hold (≈ 31 s with a browser open); when nobody does, they are closed gracefully, which
   * writes everything at once.
   */
  private async quiesceBrowsers(computer: Computer, machine: Machine): Promise<void> {
    const computerIds = [computer.id];
    const [sessions, screens, control] = await Promise.all([
      openSessions(this.db, { computerIds }),
      screensInUse(this.db, { computerIds }),
      screensControlled(this.db, computerIds),
    ]);
    if (sessions.length + screens.length + control.length > 0)
      await machine.provider.settleBrowsers(machine.ref);
    else await machine.provider.closeBrowsers(machine.ref);
  }

  /** Drops what the retention policy no longer keeps: from the catalog first, then the store. */
  private async prune(computer: Computer): Promise<void> {
    try {
      const revisions = await this.list(computer.id);
      const doomed = selectForRemoval(
        revisions.map((r) => ({ id: r.id, createdAt: r.created_at })),
        this.retention,
      ).map((r) => r.id);
      if (doomed.length === 0) return;
      await this.db.deleteFrom("checkpoints").where("id", "in", doomed).execute();
      await this.store.remove(computer.home_key, doomed);
      await this.audit(SYSTEM_ACTOR, computer, "checkpoint.pruned", { checkpointIds: doomed });
    } catch (error) {
      // a later checkpoint prunes again; keeping a revision too long loses nothing
      this.deps.logger.warn({ err: error, computerId: computer.id }, "checkpoint retention failed");
    }
  }

  private audit(
    actor: AuditActor,
    computer: Computer,
    action: string,
    data: Record<string, unknown>,
    db: Kysely<Database> = this.db,
  ): Promise<void> {
    return this.deps.audit.record(
      {
        actor,
        workspaceId: computer.workspace_id,
        action,
        target: { type: "computer", id: computer.id },
        data,
      },
      db,
    );
  }
}

/** The stream as it is, remembering why it failed if it does: a provider sees only that it broke. */
function rememberingFailure(source: ReadableStream<Uint8Array>) {
  let failure: unknown;
  const reader = source.getReader();
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await reader.read();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      } catch (error) {
        failure = error;
        controller.error(error);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return { stream, failure: () => failure };
}

const noMachine = () =>
  new HttpProblem(
    409,
    "NO_MACHINE",
    "The computer has no machine to checkpoint (never started, or destroyed); its latest checkpoint holds its home.",
  );

function codeOf(error: unknown): string {
  if (error instanceof HttpProblem) return error.code;
  if (error instanceof ProviderError || error instanceof CheckpointStoreError) return error.code;
  return "INTERNAL";
}

function describe(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, 500);
}
