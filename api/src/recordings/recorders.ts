import type { DatabaseHandle } from "@cubicle/db";
import { type CapabilityKeyring, type MintedCapability, mintCapability } from "@cubicle/proxy/capability";
import { type AuditLog, SYSTEM_ACTOR } from "../audit/audit-log.ts";
import { machineOf } from "../computers/repository.ts";
import type { Sandbox } from "../sandbox/sandbox.ts";
import { findSession } from "../sessions/leases.ts";
import { createPendingRecording, discardPendingRecording } from "./catalogue.ts";

export interface RecorderDeps {
  database: DatabaseHandle;
  sandbox: Sandbox;
  capabilities: CapabilityKeyring;
  audit: AuditLog;
}

/** An open session on a screen, as the session recorder finds it. */
export interface RecordedSession {
  id: string;
  workspace_id: string;
  computer_id: string;
  bot_id: string;
  screen_index: number;
}

export interface SessionRecorderCapability extends MintedCapability {
  recordingId: string;
}

/**
 * A `record` capability for the session's screen, and its recording's pending row: the api's own
 * socket, opened to the proxy so the bot's screen is recorded with nobody watching (subject
 * `recorder:<sessionId>`). Throws the database's unique violation when the session already has a
 * live recording (another replica began one). Audited as `screen.capability_minted` by the
 * system, with the session and recording ids, which links the session to its recording.
 */
export async function mintSessionRecorder(
  deps: RecorderDeps,
  session: RecordedSession,
): Promise<SessionRecorderCapability> {
  const { db } = deps.database;
  const view = await findSession(db, session.workspace_id, session.id);
  if (!view) throw new Error(`session ${session.id} is gone`);
  const recordingId = await createPendingRecording(db, {
    workspaceId: session.workspace_id,
    computerId: session.computer_id,
    screen: session.screen_index,
    kind: "session",
    sessionId: session.id,
    botId: session.bot_id,
    actor: { type: view.holder_type, id: view.holder_id, name: view.holder_name ?? view.holder_id },
  });
  try {
    const computer = await db
      .selectFrom("computers")
      .selectAll()
      .where("id", "=", session.computer_id)
      .executeTakeFirstOrThrow();
    const { provider, ref } = await machineOf(deps, computer);
    const minted = await mintCapability(deps.capabilities, {
      subject: `recorder:${session.id}`,
      workspaceId: session.workspace_id,
      computerId: session.computer_id,
      screen: session.screen_index,
      mode: "record",
      recordingId,
      target: await provider.openScreen(ref, session.screen_index),
    });
    await deps.audit.record({
      actor: SYSTEM_ACTOR,
      workspaceId: session.workspace_id,
      action: "screen.capability_minted",
      target: { type: "computer", id: session.computer_id },
      data: {
        mode: "record",
        screen: session.screen_index,
        jti: minted.jti,
        sessionId: session.id,
        recordingId,
      },
    });
    return { ...minted, recordingId };
  } catch (error) {
    await discardPendingRecording(db, recordingId);
    throw error;
  }
}
