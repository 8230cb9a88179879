/**
 * The toolbox's /process routes: executeCommand (one bash per call) and the sessions. Outputs are
 * streamed from files in the sandbox into the JSON answers, never held whole in the emulator.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { readJsonObject } from "../http/body.ts";
import { WorkingDirMissing } from "../machines/index.ts";
import { badRequest, DaytonaHttpError } from "./errors.ts";
import { JsonStream } from "./json-stream.ts";
import { Demuxer, type Stream } from "./labelled.ts";
import { readFile, waitForFile } from "./reading.ts";
import type { Sandbox } from "./sandbox.ts";
import type { Session, SessionCommand } from "./sessions.ts";
import { SANDBOX_USER } from "./user.ts";

export async function executeCommand(sandbox: Sandbox, req: IncomingMessage, res: ServerResponse) {
  const body = await readJsonObject(req);
  const command = typeof body.command === "string" ? body.command : "";
  if (command.trim() === "") throw badRequest("command cannot be empty or whitespace-only");
  const timeout = typeof body.timeout === "number" && body.timeout > 0 ? body.timeout : 0;
  const cwd = typeof body.cwd === "string" && body.cwd !== "" ? body.cwd : SANDBOX_USER.home;
  const envs =
    typeof body.envs === "object" && body.envs !== null ? (body.envs as Record<string, string>) : {};
  const output = `/tmp/.daytona-execute-${randomUUID()}`;
  let process: Awaited<ReturnType<Sandbox["spawn"]>>;
  try {
    // setsid: the command's bash leads a process group, so a timeout kills all it started;
    // its output goes to a file so an answer of any size is streamed, and only once it has ended
    process = await sandbox.spawn({
      argv: ["setsid", "bash", "-c", 'exec bash -c "$2" > "$1" 2>&1', "execute", output, command],
      user: SANDBOX_USER.name,
      cwd,
      env: { HOME: SANDBOX_USER.home, USER: SANDBOX_USER.name, LOGNAME: SANDBOX_USER.name, ...envs },
    });
  } catch (error) {
    if (!(error instanceof WorkingDirMissing)) throw error;
    const answer = new JsonStream(res);
    answer.begin(200);
    await answer.raw(JSON.stringify({ exitCode: -1, result: `chdir ${cwd}: no such file or directory` }));
    answer.end();
    return;
  }
  let timedOut = false;
  const timer =
    timeout > 0
      ? setTimeout(() => {
          timedOut = true;
          void sandbox
            .run({ argv: ["kill", "-KILL", "--", `-${process.pid}`], user: "root", cwd: "/" })
            .catch(() => undefined);
        }, timeout * 1000)
      : undefined;
  try {
    for await (const _ of process.output);
  } finally {
    clearTimeout(timer);
  }
  const exit = process.exit();
  try {
    if (timedOut) {
      throw new DaytonaHttpError(
        408,
        `Command execution timed out after ${timeout} seconds. The timeout can be increased by adjusting the timeout parameter in the request.`,
        "PROCESS_EXECUTION_TIMEOUT",
        "DAYTONA_DAEMON",
      );
    }
    if (!exit) throw new Error("the connection to the command broke");
    const answer = new JsonStream(res);
    answer.begin(200);
    await answer.raw(`{"exitCode":${exit.code ?? -1},"result":`);
    await answer.string(readFile(sandbox, output));
    await answer.raw("}");
    answer.end();
  } finally {
    void sandbox.run({ argv: ["rm", "-f", "--", output], user: "root", cwd: "/" }).catch(() => undefined);
  }
}

export async function createSession(sandbox: Sandbox, req: IncomingMessage, res: ServerResponse) {
  const body = await readJsonObject(req);
  await sandbox.sessions.create(typeof body.sessionId === "string" ? body.sessionId : "");
  res.writeHead(201).end();
}

export async function sessionInfo(sandbox: Sandbox, session: Session) {
  const commands = [];
  for (const command of session.commands.values()) commands.push(await commandInfo(sandbox, command));
  return { sessionId: session.id, commands };
}

export async function commandInfo(sandbox: Sandbox, command: SessionCommand) {
  const exitCode = await sandbox.sessions.exitCode(command);
  return { id: command.id, command: command.command, ...(exitCode === undefined ? {} : { exitCode }) };
}

/**
 * A session command: async answers its id at once (202); sync waits for its exit and answers its
 * output (the labelled log, as Daytona's `output` is) and its stdout and stderr apart.
 */
export async function executeSessionCommand(
  sandbox: Sandbox,
  sessionId: string,
  req: IncomingMessage,
  res: ServerResponse,
) {
  const body = await readJsonObject(req);
  const runAsync = body.runAsync === true || body.async === true;
  const session = sandbox.sessions.get(sessionId);
  const command = await sandbox.sessions.execute(
    sessionId,
    typeof body.command === "string" ? body.command : "",
  );
  if (runAsync) {
    const answer = new JsonStream(res);
    answer.begin(202);
    await answer.raw(JSON.stringify({ cmdId: command.id }));
    answer.end();
    return;
  }
  const gone = new AbortController();
  res.once("close", () => gone.abort(new Error("the client went away")));
  const ended = session.ended.then(() => {
    throw new DaytonaHttpError(400, "session cancelled", "BAD_REQUEST", "DAYTONA_DAEMON");
  });
  const exited = waitForFile(sandbox, `${command.dir}/exit_code`, gone.signal);
  // whichever loses the race settles later, unheard
  ended.catch(() => undefined);
  exited.catch(() => undefined);
  let exitCode: number;
  try {
    exitCode = Number.parseInt(await Promise.race([exited, ended]), 10);
  } finally {
    gone.abort(new Error("done"));
  }
  command.exitCode = exitCode;
  const answer = new JsonStream(res);
  answer.begin(200);
  await answer.raw(`{"cmdId":${JSON.stringify(command.id)},"exitCode":${exitCode},"output":`);
  await writeLogs(answer, sandbox, command);
  await answer.raw("}");
  answer.end();
}

/** `GET …/logs` without a WebSocket: the log so far, whole and demultiplexed. */
export async function commandLogs(sandbox: Sandbox, command: SessionCommand, res: ServerResponse) {
  const answer = new JsonStream(res);
  answer.begin(200);
  await answer.raw('{"output":');
  await writeLogs(answer, sandbox, command);
  await answer.raw("}");
  answer.end();
}

/** The log as `output`, then `"stdout"` and `"stderr"`, each a pass over the log file. */
async function writeLogs(answer: JsonStream, sandbox: Sandbox, command: SessionCommand) {
  const log = `${command.dir}/output.log`;
  await answer.string(readFile(sandbox, log));
  for (const stream of ["stdout", "stderr"] as const) {
    await answer.raw(`,"${stream}":`);
    await answer.string(only(stream, readFile(sandbox, log)));
  }
}

async function* only(stream: Stream, chunks: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const demuxer = new Demuxer(stream);
  for await (const chunk of chunks) yield demuxer.push(chunk);
}
