import { CubicleError, Session } from "../index.ts";
import type { Command, Context } from "./command.ts";
import { CliError, fields, line, printJson, progress } from "./output.ts";
import { clearState, readState, type SessionState, saveState } from "./state.ts";

/**
 * The session `session open` saved, resumed in its workspace and heartbeaten: every command that
 * uses it extends it to a full lease (SESSION_LEASE_MS) from now, since nothing heartbeats between
 * invocations, and keeps heartbeating it while it runs, so a long `shell` or file transfer does not
 * outlast the lease (the library's timer does not keep the process from exiting, and stops at end()).
 */
export async function currentSession(context: Context): Promise<{ session: Session; state: SessionState }> {
  const state = await readState(context.env);
  if (!state) throw new CliError("NO_SESSION", "No open session: run `cubicle session open <bot>` first.");
  const cubicle = await context.cubicle();
  if (state.url !== cubicle.url)
    throw new CliError("NO_SESSION", `The open session is on ${state.url}, not on ${cubicle.url}.`);
  let session: Session | undefined;
  try {
    session = await cubicle.resumeSession(state.botId, state.sessionId, {
      workspaceId: state.workspaceId,
      heartbeats: true,
    });
    await session.heartbeat();
    return { session, state };
  } catch (error) {
    session?.stopHeartbeats();
    // ended elsewhere, expired or reclaimed by a newer session (STALE_FENCE), or unknown to the api:
    // the saved one is of no more use. Any other refusal (a key of another workspace, the api away)
    // may pass, so the file is kept.
    if (
      error instanceof CubicleError &&
      (error.code === "STALE_FENCE" || error.code === "SESSION_NOT_FOUND")
    ) {
      await clearState(context.env);
      throw new CliError(
        "NO_SESSION",
        `The session ${state.sessionId} of bot "${state.botName}" is no longer open (it ended or expired): open a new one with \`cubicle session open <bot>\`.`,
      );
    }
    throw error;
  }
}

function view(session: Session, state: SessionState) {
  return { ...state, screen: session.screen, expiresAt: session.expiresAt.toISOString() };
}

function show(context: Context, session: Session, state: SessionState): void {
  if (context.json) {
    printJson(view(session, state));
    return;
  }
  const seconds = Math.round((session.expiresAt.getTime() - Date.now()) / 1000);
  fields([
    ["session", state.sessionId],
    ["bot", `${state.botName} (${state.botId})`],
    ["computer", state.computerId],
    ["screen", session.screen === null ? "none" : String(session.screen)],
    ["fence", String(state.fence)],
    ["expires", `${session.expiresAt.toISOString()} (in ${seconds} s unless used again)`],
  ]);
}

/** Refuses to forget a live session: a second `open` would leave it to expire unused. */
async function refuseIfOpen(context: Context): Promise<void> {
  const state = await readState(context.env);
  if (!state) return;
  const live = await currentSession(context).catch((error: unknown) => {
    if (error instanceof CliError) return undefined;
    throw error;
  });
  if (live)
    throw new CliError(
      "USAGE",
      `A session is already open (bot "${state.botName}", session ${state.sessionId}): end it with \`cubicle session end\` first.`,
    );
}

export const sessionCommands: Record<string, Command> = {
  session: {
    usage: "cubicle session [open <bot> | end [--failure]]",
    summary: "Show the open session (and extend it by a lease).",
    arity: [0, 0],
    async run(context) {
      const { session, state } = await currentSession(context);
      show(context, session, state);
      return 0;
    },
  },
  "session open": {
    usage: "cubicle session open <bot>",
    summary: "Open a session for a bot (by name or id) and keep it for the commands that follow.",
    details: [
      "The bot's computer starts if it must. The session is saved in $CUBICLE_SESSION_FILE (or",
      "session.json next to the config) and lasts SESSION_LEASE_MS past the last command using it.",
    ],
    arity: [1, 1],
    async run(context, [bot = ""]) {
      await refuseIfOpen(context);
      const cubicle = await context.cubicle();
      const session = await progress(`Opening a session for ${bot}`, async () => {
        const found = await cubicle.bot(bot);
        // no background heartbeats: this process ends now; each later command heartbeats instead
        const opened = await Session.open(cubicle, found, { heartbeats: false });
        return { opened, found };
      });
      const state: SessionState = {
        url: cubicle.url,
        workspaceId: session.opened.workspaceId,
        botId: session.found.id,
        botName: session.found.name,
        sessionId: session.opened.id,
        computerId: session.opened.computerId,
        fence: session.opened.fence,
      };
      await saveState(context.env, state);
      show(context, session.opened, state);
      return 0;
    },
  },
  "session end": {
    usage: "cubicle session end [--failure]",
    summary: "End the open session (outcome success, or failure with --failure).",
    options: { failure: { type: "boolean" } },
    arity: [0, 0],
    async run(context, _args, values) {
      const { session, state } = await currentSession(context);
      const record = await session.end(values.failure ? "failure" : "success");
      await clearState(context.env);
      if (context.json) printJson(record);
      else line(`Ended session ${state.sessionId} (${record.outcome}).`);
      return 0;
    },
  },
};
