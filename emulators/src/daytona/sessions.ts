/**
 * Daytona's sessions: each is one long-lived bash of the sandbox user, so what a command changes
 * (cwd, variables, functions) is there for the next. A command is written to the shell's stdin in
 * Daytona's wrapper: it runs in the shell itself, its stdout and stderr are labelled (labelled.ts)
 * into a log file in the sandbox, and its exit code is written once all output is in the log. Logs
 * are read from those files, so nothing is held in the emulator.
 */
import { randomUUID } from "node:crypto";
import type { ContainerProcess } from "../machines/index.ts";
import { badRequest, DaytonaHttpError, notFound } from "./errors.ts";
import { LABELLER } from "./labelled.ts";
import type { Sandbox } from "./sandbox.ts";
import { SANDBOX_USER } from "./user.ts";

/** Where Daytona's daemon keeps session logs: ~/.daytona/sessions/<session>/<command>/. */
const SESSIONS_DIR = `${SANDBOX_USER.home}/.daytona/sessions`;

export interface SessionCommand {
  id: string;
  command: string;
  exitCode?: number;
  /** The folder with output.log and exit_code. */
  dir: string;
}

export class Session {
  readonly commands = new Map<string, SessionCommand>();
  /** Resolves once the shell has gone (deleted, killed, or the connection to it broke). */
  readonly ended: Promise<void>;

  constructor(
    readonly id: string,
    readonly shell: ContainerProcess,
  ) {
    // the shell's own output (the commands' goes to their logs) is read so it never blocks
    this.ended = (async () => {
      for await (const _ of shell.output);
    })().catch(() => undefined);
  }

  get dir(): string {
    return `${SESSIONS_DIR}/${this.id}`;
  }

  command(cmdId: string): SessionCommand {
    const command = this.commands.get(cmdId);
    if (!command) throw notFound("command not found", "DAYTONA_DAEMON");
    return command;
  }
}

const quote = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;

/** Daytona's command wrapper, run by the session's shell; `$__d` is the command's folder. */
function wrapper(dir: string, command: string): string {
  const script = Buffer.from(command).toString("base64");
  return `{
__d=${quote(dir)}
mkdir -p "$__d" && : > "$__d/output.log" && printf %s ${quote(script)} | base64 -d > "$__d/cmd.sh"
rm -f "$__d/stdout.pipe" "$__d/stderr.pipe" && mkfifo "$__d/stdout.pipe" "$__d/stderr.pipe"
perl -e ${quote(LABELLER)} stdout < "$__d/stdout.pipe" >> "$__d/output.log" & __r1=$!
perl -e ${quote(LABELLER)} stderr < "$__d/stderr.pipe" >> "$__d/output.log" & __r2=$!
{ . "$__d/cmd.sh"; } < /dev/null > "$__d/stdout.pipe" 2> "$__d/stderr.pipe"
__ec=$?
wait "$__r1" "$__r2"
rm -f "$__d/stdout.pipe" "$__d/stderr.pipe"
echo "$__ec" > "$__d/exit_code"
}
`;
}

/** The sessions of one sandbox; they end when it stops. */
export class Sessions {
  private readonly sessions = new Map<string, Session>();

  constructor(private readonly sandbox: Sandbox) {}

  get(sessionId: string): Session {
    const session = this.sessions.get(sessionId);
    if (!session) throw notFound("session not found", "DAYTONA_DAEMON");
    return session;
  }

  list(): Session[] {
    return [...this.sessions.values()];
  }

  async create(sessionId: string): Promise<void> {
    if (!/^[A-Za-z0-9._-]{1,128}$/.test(sessionId) || sessionId.startsWith(".")) {
      throw badRequest(`invalid session id: ${sessionId}`);
    }
    if (this.sessions.has(sessionId)) {
      throw new DaytonaHttpError(409, "session already exists", "CONFLICT", "DAYTONA_DAEMON");
    }
    // setsid: the shell leads a session of its own, which every process it starts joins, so
    // deleting the session can kill them all
    const shell = await this.sandbox.spawn({
      argv: ["setsid", "bash"],
      user: SANDBOX_USER.name,
      cwd: SANDBOX_USER.home,
      env: { HOME: SANDBOX_USER.home, USER: SANDBOX_USER.name, LOGNAME: SANDBOX_USER.name },
      stdin: true,
    });
    const session = new Session(sessionId, shell);
    this.sessions.set(sessionId, session);
    void session.ended.then(() => {
      if (this.sessions.get(sessionId) === session) this.sessions.delete(sessionId);
    });
  }

  /** Hands the command to the session's shell; it runs after the commands before it. */
  async execute(sessionId: string, command: string): Promise<SessionCommand> {
    if (command.trim() === "") throw badRequest("command cannot be empty");
    const session = this.get(sessionId);
    const id = randomUUID();
    const entry: SessionCommand = { id, command, dir: `${session.dir}/${id}` };
    session.commands.set(id, entry);
    const stdin = session.shell.stdin;
    if (!stdin) throw badRequest("the session has no input");
    await new Promise<void>((resolve, reject) =>
      stdin.write(wrapper(entry.dir, command), (error) => (error ? reject(error) : resolve())),
    );
    return entry;
  }

  /** The command's exit code once its exit_code file is there. */
  async exitCode(command: SessionCommand): Promise<number | undefined> {
    if (command.exitCode !== undefined) return command.exitCode;
    const result = await this.sandbox.script('cat -- "$1" 2>/dev/null', [`${command.dir}/exit_code`]);
    const code = Number.parseInt(result.stdout.toString("utf8"), 10);
    if (result.code === 0 && Number.isInteger(code)) command.exitCode = code;
    return command.exitCode;
  }

  /** Ends the session: its shell and every process it started are killed, its logs removed. */
  async delete(sessionId: string): Promise<void> {
    const session = this.get(sessionId);
    this.sessions.delete(sessionId);
    await this.sandbox.run({
      argv: [
        "sh",
        "-c",
        'pkill -KILL -s "$1"; rm -rf -- "$2"',
        "delete",
        String(session.shell.pid),
        session.dir,
      ],
      user: "root",
      cwd: "/",
    });
    session.shell.detach();
  }

  /** The sandbox stopped: its processes are gone already. */
  forget(): void {
    for (const session of this.sessions.values()) session.shell.detach();
    this.sessions.clear();
  }
}
