import type { Cubicle } from "../cubicle.ts";
import { ComputerBusyError, CubicleError } from "../problem.ts";
import type { Session } from "../session.ts";
import { log } from "./log.ts";

/**
 * The one session an MCP server holds for its bot: opened on the first tool call (so a server an
 * agent never uses never takes the bot), kept alive by the library's heartbeats, ended on `end()`.
 * Every tool call of every MCP client of this process goes through the same session.
 */
export class BotSession {
  private session: Promise<Session> | undefined;
  private ending: Promise<void> | undefined;

  constructor(
    private readonly cubicle: Cubicle,
    readonly bot: string,
  ) {}

  /** Runs `work` on the bot's session, opening it first if none is held. */
  async use<T>(work: (session: Session) => Promise<T>): Promise<T> {
    if (this.ending) throw new Error("The MCP server is shutting down; its session with the bot has ended.");
    const opening = this.open();
    const session = await opening;
    try {
      return await work(session);
    } catch (error) {
      // the session expired or was taken over between heartbeats: the next call opens a new one
      if (error instanceof CubicleError && error.code === "STALE_FENCE") {
        session.stopHeartbeats();
        this.forget(opening, error.code);
      }
      throw error;
    }
  }

  /** Ends the held session (outcome success), if one was opened; later calls are refused. */
  end(): Promise<void> {
    this.ending ??= this.endHeld();
    return this.ending;
  }

  private open(): Promise<Session> {
    if (this.session) return this.session;
    const opening: Promise<Session> = this.cubicle
      .openSession(this.bot, { onLost: (error) => this.forget(opening, error.code) })
      .then((session) => {
        log(`opened session ${session.id} for bot "${this.bot}" (screen ${session.screen})`);
        return session;
      })
      .catch((error: unknown) => {
        // a busy bot may be free on the next call: do not remember the failure
        this.forget(opening);
        throw error;
      });
    this.session = opening;
    return opening;
  }

  /** Lets go of a session that is no longer the bot's (only if it is still the one held). */
  private forget(opening: Promise<Session>, reason?: string): void {
    if (this.session !== opening) return;
    this.session = undefined;
    if (reason) log(`lost the session for bot "${this.bot}" (${reason}); the next tool call opens a new one`);
  }

  private async endHeld(): Promise<void> {
    const held = this.session;
    this.session = undefined;
    const session = await held?.catch(() => undefined);
    if (!session) return;
    await session.end("success");
    log(`ended session ${session.id} for bot "${this.bot}"`);
  }
}

/** What a failed tool call tells the agent: a busy bot names its holder and until when. */
export function describeError(error: unknown, bot: string): string {
  if (error instanceof ComputerBusyError) {
    const { holder } = error;
    const who = `${holder.type === "api_key" ? "API key" : "user"} ${holder.name ? `"${holder.name}"` : holder.id}`;
    return (
      `The bot "${bot}" is busy: its computer is held by ${who} (session ${holder.sessionId}) until ` +
      `${holder.expiresAt} unless renewed. Try again later, or ask that holder to end its session.`
    );
  }
  if (error instanceof CubicleError) return `${error.code}: ${error.detail}`;
  return error instanceof Error ? error.message : String(error);
}
