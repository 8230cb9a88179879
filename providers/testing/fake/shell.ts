import { posix } from "node:path";
import { setImmediate as nextTurn } from "node:timers/promises";
import { ProviderError } from "../../src/contract/index.ts";
import { homeRelativePath } from "../../src/kernel/home-path.ts";
import type { FakeHome } from "./filesystem.ts";
import type { ProcessTable } from "./processes.ts";
import {
  type AndOr,
  type Item,
  type Program,
  parse,
  type Redirect,
  ShellSyntaxError,
  type SimpleCommand,
  type Word,
} from "./shell-syntax.ts";

/** Where a run's stdout and stderr go (the provider caps and queues them). */
export interface ShellOutput {
  write(stream: "stdout" | "stderr", text: string): void;
  /** True once nothing more written will be delivered: later output may as well not be made. */
  readonly closed: boolean;
}

/** What one run shares with everything it starts, background processes and scripts included. */
export interface ShellMachine {
  home: FakeHome;
  /** The absolute-looking path `pwd` and `$HOME` show for the home. */
  homeDir: string;
  processes: ProcessTable;
}

export interface ShellRun {
  machine: ShellMachine;
  output: ShellOutput;
  /** Variables the commands see (the request's env and HOME). */
  vars: Record<string, string>;
  /** Home-relative working directory. */
  cwd: string;
  /** Aborting it kills the foreground and every background process the run started. */
  signal: AbortSignal;
}

type Target =
  | { kind: "stream"; stream: "stdout" | "stderr" }
  | { kind: "null" }
  | { kind: "file"; path: string };

interface ShellState {
  run: ShellRun;
  vars: Map<string, string>;
  args: string[];
  cwd: string;
  fds: Map<number, Target>;
  /** This process's own kill signal (a background process has its own). */
  signal: AbortSignal;
  background: boolean;
  lastStatus: number;
  lastBackground: number | null;
  depth: number;
  counter: { steps: number };
}

/** `exit N` unwinds to the nearest shell: the run, a script, or a background process. */
class ExitRequest {
  constructor(readonly code: number) {}
}

/** The process was killed; nothing more of it runs. */
export class ShellKilled extends Error {
  constructor() {
    super("killed");
    this.name = "ShellKilled";
  }
}

const MAX_SCRIPT_DEPTH = 16;
const OUTPUT_CHUNK = 8_192;
const READ_CHUNK = 65_536;
/** Commands run between yields to the event loop, so timers (timeouts) can always fire. */
const STEPS_PER_TURN = 64;

const encoder = new TextEncoder();

/**
 * Runs `command` to its end and resolves with its exit status. Rejects with `ShellKilled` when
 * `run.signal` aborts; the caller reports that (124 / 130), not the shell.
 */
export async function runShell(command: string, run: ShellRun): Promise<number> {
  const state: ShellState = {
    run,
    vars: new Map(Object.entries(run.vars)),
    args: ["sh"],
    cwd: run.cwd,
    fds: new Map<number, Target>([
      [1, { kind: "stream", stream: "stdout" }],
      [2, { kind: "stream", stream: "stderr" }],
    ]),
    signal: run.signal,
    background: false,
    lastStatus: 0,
    lastBackground: null,
    depth: 0,
    counter: { steps: 0 },
  };
  return runSource(command, state);
}

async function runSource(source: string, state: ShellState): Promise<number> {
  let program: Program;
  try {
    program = parse(source);
  } catch (error) {
    if (!(error instanceof ShellSyntaxError)) throw error;
    write(state, 2, `sh: syntax error: ${error.message}\n`);
    return 2;
  }
  try {
    return await runProgram(program, state);
  } catch (error) {
    if (error instanceof ExitRequest) return error.code;
    throw error;
  }
}

async function runProgram(program: Program, state: ShellState): Promise<number> {
  for (const item of program) await runItem(item, state);
  return state.lastStatus;
}

async function runItem(item: Item, state: ShellState): Promise<void> {
  if (!item.background) {
    await runAndOr(item.andOr, state);
    return;
  }
  const child: ShellState = {
    ...state,
    vars: new Map(state.vars),
    fds: new Map(state.fds),
    background: true,
  };
  state.lastBackground = state.run.machine.processes.spawn(state.run.signal, async (signal) => {
    child.signal = signal;
    try {
      await runAndOr(item.andOr, child);
    } catch (error) {
      if (!(error instanceof ExitRequest)) throw error;
    }
  });
  state.lastStatus = 0;
}

async function runAndOr(andOr: AndOr, state: ShellState): Promise<void> {
  await runSimple(andOr.first, state);
  for (const { op, command } of andOr.rest) {
    if ((op === "&&") === (state.lastStatus === 0)) await runSimple(command, state);
  }
}

function checkAlive(state: ShellState): void {
  if (state.signal.aborted) throw new ShellKilled();
}

async function runSimple(command: SimpleCommand, state: ShellState): Promise<void> {
  checkAlive(state);
  if (++state.counter.steps % STEPS_PER_TURN === 0) {
    await nextTurn();
    checkAlive(state);
  }
  state.lastStatus = await execute(command, state);
  checkAlive(state);
}

async function execute(command: SimpleCommand, state: ShellState): Promise<number> {
  const argv = command.words.flatMap((word) => expand(word, state));
  const assigned = command.assignments.map(
    ({ name, value }) => [name, expand(value, state, false).join("")] as const,
  );
  const fds = new Map(state.fds);
  for (const redirect of command.redirects) {
    const problem = applyRedirect(redirect, fds, state);
    if (problem) {
      write(state, 2, `sh: ${problem}\n`);
      return 2;
    }
  }
  const [name, ...args] = argv;
  if (name === undefined) {
    for (const [key, value] of assigned) state.vars.set(key, value);
    return 0;
  }
  const vars = assigned.length > 0 ? new Map([...state.vars, ...assigned]) : state.vars;
  const context: CommandContext = { state: { ...state, fds, vars }, name, args };
  if (name.includes("/")) return runScriptFile(context, name, args, true);
  const builtin = BUILTINS[name];
  if (builtin) return builtin(context);
  write(context.state, 2, `${name}: command not found\n`);
  return 127;
}

/**
 * A word's fields: quoted parts stay whole, unquoted `$…` results are split on blanks, and a
 * word that expands to nothing unquoted disappears (all as in sh). `split: false` is for
 * assignments, whose values are never split.
 */
function expand(
  word: Word,
  state: Pick<ShellState, "vars" | "args" | "lastStatus" | "lastBackground">,
  split = true,
): string[] {
  const fields: string[] = [];
  let current = "";
  let started = false;
  for (const part of word) {
    if (part.kind === "text") {
      current += part.text;
      started = true;
      continue;
    }
    const value = param(part.name, state);
    if (part.quoted || !split) {
      current += value;
      started = true;
      continue;
    }
    value.split(/[ \t\n]+/).forEach((piece, i) => {
      if (i > 0 && started) {
        fields.push(current);
        current = "";
        started = false;
      }
      if (piece !== "") {
        current += piece;
        started = true;
      }
    });
  }
  if (started || !split) fields.push(current);
  return fields;
}

function param(
  name: string,
  state: Pick<ShellState, "vars" | "args" | "lastStatus" | "lastBackground">,
): string {
  if (name === "?") return String(state.lastStatus);
  if (name === "!") return state.lastBackground === null ? "" : String(state.lastBackground);
  if (name === "#") return String(Math.max(0, state.args.length - 1));
  if (/^\d$/.test(name)) return state.args[Number(name)] ?? "";
  return state.vars.get(name) ?? "";
}

type Resolved = { kind: "home"; path: string } | { kind: "null" } | { kind: "outside" };

/** A path a command names: relative to the cwd, or absolute inside `$HOME`; nothing else exists. */
function resolvePath(arg: string, state: ShellState): Resolved {
  if (arg === "/dev/null") return { kind: "null" };
  const homeDir = state.run.machine.homeDir;
  let relative: string;
  if (arg.startsWith("/")) {
    const normal = posix.normalize(arg);
    if (normal !== homeDir && !normal.startsWith(`${homeDir}/`)) return { kind: "outside" };
    relative = normal.slice(homeDir.length + 1);
  } else {
    relative = state.cwd === "" ? arg : `${state.cwd}/${arg}`;
  }
  try {
    return { kind: "home", path: homeRelativePath(relative) };
  } catch {
    return { kind: "outside" };
  }
}

function applyRedirect(redirect: Redirect, fds: Map<number, Target>, state: ShellState): string | null {
  const fields = expand(redirect.target, state);
  const [target] = fields;
  if (target === undefined || fields.length > 1) return "ambiguous redirect";
  if (redirect.op === ">&") {
    if (target === "-") {
      fds.set(redirect.fd, { kind: "null" });
      return null;
    }
    const source = /^\d$/.test(target) ? fds.get(Number(target)) : undefined;
    if (!source) return `${target}: bad file descriptor`;
    fds.set(redirect.fd, source);
    return null;
  }
  const resolved = resolvePath(target, state);
  if (resolved.kind === "null") {
    fds.set(redirect.fd, { kind: "null" });
    return null;
  }
  if (resolved.kind === "outside") return `cannot create ${target}: Permission denied`;
  try {
    state.run.machine.home.append(resolved.path, new Uint8Array(0), redirect.op === ">");
  } catch (error) {
    if (!(error instanceof ProviderError)) throw error;
    const why =
      error.code === "FILE_NOT_FOUND"
        ? "Directory nonexistent"
        : error.code === "NOT_A_FILE"
          ? "Is a directory"
          : "Not a directory";
    return `cannot create ${target}: ${why}`;
  }
  fds.set(redirect.fd, { kind: "file", path: resolved.path });
  return null;
}

function write(state: ShellState, fd: number, text: string): void {
  const target = state.fds.get(fd);
  if (!target || target.kind === "null" || text === "") return;
  if (target.kind === "stream") {
    state.run.output.write(target.stream, text);
    return;
  }
  try {
    state.run.machine.home.append(target.path, encoder.encode(text), false);
  } catch {
    // The file's folder was deleted meanwhile; a real process writes into the void too.
  }
}

/** Whether anything written to `fd` would still arrive somewhere. */
function wanted(state: ShellState, fd: number): boolean {
  const target = state.fds.get(fd);
  if (!target || target.kind === "null") return false;
  return target.kind === "file" || !state.run.output.closed;
}

/** Waits `ms` real milliseconds, or less when the process is killed. */
function sleepFor(ms: number, state: ShellState): Promise<void> {
  return new Promise((resolve) => {
    if (state.signal.aborted) {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(timer);
      state.signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    // A background sleep alone should not keep the server (or a test runner) alive.
    if (state.background) timer.unref();
    state.signal.addEventListener("abort", done, { once: true });
  });
}

interface CommandContext {
  state: ShellState;
  name: string;
  args: string[];
}

type Builtin = (context: CommandContext) => number | Promise<number>;

const fail = (context: CommandContext, message: string, code = 1) => {
  write(context.state, 2, `${context.name}: ${message}\n`);
  return code;
};

const INTEGER = /^-?\d+$/;

const BUILTINS: Record<string, Builtin> = {
  true: () => 0,
  false: () => 1,

  echo: ({ state, args }) => {
    const newline = args[0] !== "-n";
    const words = newline ? args : args.slice(1);
    write(state, 1, `${words.join(" ")}${newline ? "\n" : ""}`);
    return 0;
  },

  pwd: ({ state }) => {
    const { homeDir } = state.run.machine;
    write(state, 1, `${state.cwd === "" ? homeDir : `${homeDir}/${state.cwd}`}\n`);
    return 0;
  },

  exit: (context) => {
    const [code] = context.args;
    if (code === undefined) throw new ExitRequest(context.state.lastStatus);
    if (!/^\d+$/.test(code)) {
      fail(context, `Illegal number: ${code}`);
      throw new ExitRequest(2);
    }
    throw new ExitRequest(Number(code) % 256);
  },

  sleep: async (context) => {
    if (context.args.length === 0) return fail(context, "missing operand");
    let seconds = 0;
    for (const arg of context.args) {
      if (!/^(\d+\.?\d*|\.\d+)$/.test(arg)) return fail(context, `invalid time interval '${arg}'`);
      seconds += Number(arg);
    }
    await sleepFor(seconds * 1_000, context.state);
    checkAlive(context.state);
    return 0;
  },

  seq: async (context) => {
    const { state, args } = context;
    if (args.length < 1 || args.length > 3) return fail(context, "expects 1 to 3 integer arguments");
    const bad = args.find((arg) => !INTEGER.test(arg));
    if (bad !== undefined) return fail(context, `invalid argument: '${bad}'`);
    const numbers = args.map(Number);
    const [first, step, last] =
      numbers.length === 1
        ? [1, 1, numbers[0] ?? 0]
        : numbers.length === 2
          ? [numbers[0] ?? 1, 1, numbers[1] ?? 0]
          : numbers;
    if (step === undefined || first === undefined || last === undefined || step === 0) {
      return fail(context, "invalid zero increment");
    }
    // Generated a chunk at a time, and no further once nobody would receive it: `seq 1 1e9`
    // under an output cap costs a few chunks, not the whole output.
    let chunk = "";
    for (let n = first; step > 0 ? n <= last : n >= last; n += step) {
      chunk += `${n}\n`;
      if (chunk.length < OUTPUT_CHUNK) continue;
      write(state, 1, chunk);
      chunk = "";
      if (!wanted(state, 1)) return 0;
      await nextTurn();
      checkAlive(state);
    }
    write(state, 1, chunk);
    return 0;
  },

  cat: async (context) => {
    const { state, args } = context;
    let status = 0;
    for (const arg of args) {
      const resolved = resolvePath(arg, state);
      if (resolved.kind === "null") continue;
      const node = resolved.kind === "home" ? state.run.machine.home.lookup(resolved.path) : undefined;
      if (!node) {
        status = fail(context, `${arg}: No such file or directory`);
        continue;
      }
      if (node.kind === "directory") {
        status = fail(context, `${arg}: Is a directory`);
        continue;
      }
      const decoder = new TextDecoder();
      for (let at = 0; at < node.data.length; at += READ_CHUNK) {
        write(state, 1, decoder.decode(node.data.subarray(at, at + READ_CHUNK), { stream: true }));
        if (!wanted(state, 1)) return status;
        await nextTurn();
        checkAlive(state);
      }
      write(state, 1, decoder.decode());
    }
    return status;
  },

  kill: (context) => {
    const { state } = context;
    const args = [...context.args];
    let probe = false;
    if (args[0] === "-0") {
      probe = true;
      args.shift();
    } else if (args[0] === "-s") {
      args.splice(0, 2);
    } else if (args[0]?.startsWith("-") && args[0] !== "--") {
      args.shift();
    }
    if (args[0] === "--") args.shift();
    if (args.length === 0) return fail(context, "usage: kill [-s sigspec | -signum] pid ...", 2);
    let status = 0;
    for (const arg of args) {
      const pid = /^\d+$/.test(arg) ? Number(arg) : Number.NaN;
      if (Number.isNaN(pid)) {
        status = fail(context, `illegal pid: ${arg}`);
        continue;
      }
      const { processes } = state.run.machine;
      const found = probe ? processes.alive(pid) : processes.kill(pid);
      if (!found) status = fail(context, `(${pid}) - No such process`);
    }
    return status;
  },

  sh: async (context) => {
    const { args } = context;
    if (args[0] === "-c") {
      const [, source, ...rest] = args;
      if (source === undefined) return fail(context, "-c requires an argument", 2);
      return runChild(context.state, source, rest.length > 0 ? rest : ["sh"]);
    }
    const [file, ...rest] = args;
    if (file === undefined) return 0;
    return runScriptFile(context, file, rest, false);
  },
};

/** `./file` (exec bit required) or `sh file` (not required), in a child shell. */
async function runScriptFile(
  context: CommandContext,
  file: string,
  args: string[],
  needsExecBit: boolean,
): Promise<number> {
  const { state } = context;
  const resolved = resolvePath(file, state);
  const node = resolved.kind === "home" ? state.run.machine.home.lookup(resolved.path) : undefined;
  if (!node) {
    write(state, 2, `sh: ${file}: not found\n`);
    return 127;
  }
  if (node.kind === "directory" || (needsExecBit && !node.executable)) {
    write(state, 2, `sh: ${file}: permission denied\n`);
    return 126;
  }
  return runChild(state, new TextDecoder().decode(node.data), [file, ...args]);
}

async function runChild(parent: ShellState, source: string, args: string[]): Promise<number> {
  if (parent.depth >= MAX_SCRIPT_DEPTH) {
    write(parent, 2, `sh: scripts nested more than ${MAX_SCRIPT_DEPTH} deep\n`);
    return 2;
  }
  const child: ShellState = {
    ...parent,
    vars: new Map(parent.vars),
    args,
    fds: new Map(parent.fds),
    lastStatus: 0,
    lastBackground: null,
    depth: parent.depth + 1,
  };
  return runSource(source, child);
}
