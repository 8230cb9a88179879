import { describe, expect, it } from "vitest";
import { OUTPUT_TRUNCATED_MARKER } from "../../src/contract/index.ts";
import { FakeHome } from "./filesystem.ts";
import { FIRST_PID, ProcessTable } from "./processes.ts";
import { runCommand } from "./run.ts";
import { runShell, ShellKilled, type ShellMachine } from "./shell.ts";
import { parse, ShellSyntaxError } from "./shell-syntax.ts";

const HOME_DIR = "/home/test";

function machine(): ShellMachine {
  let tick = 0;
  return {
    home: new FakeHome(() => new Date(tick++ * 1_000)),
    homeDir: HOME_DIR,
    processes: new ProcessTable(),
  };
}

async function sh(
  command: string,
  options: { on?: ShellMachine; vars?: Record<string, string>; cwd?: string; signal?: AbortSignal } = {},
) {
  const on = options.on ?? machine();
  let stdout = "";
  let stderr = "";
  const code = await runShell(command, {
    machine: on,
    output: {
      write: (stream, text) => {
        if (stream === "stdout") stdout += text;
        else stderr += text;
      },
      closed: false,
    },
    vars: { HOME: HOME_DIR, ...options.vars },
    cwd: options.cwd ?? "",
    signal: options.signal ?? new AbortController().signal,
  });
  return { code, stdout, stderr, on };
}

const text = (on: ShellMachine, path: string) => Buffer.from(on.home.read(path, 1_000_000)).toString();
const put = (on: ShellMachine, path: string, content: string, executable = false) =>
  on.home.write(path, new TextEncoder().encode(content), executable);

describe("fake shell: parsing", () => {
  it("splits sequences, and-or lists and background items", () => {
    const program = parse("a; b && c || d & e\nf");
    expect(program.map((item) => item.background)).toEqual([false, true, false, false]);
    expect(program[1]?.andOr.rest.map((r) => r.op)).toEqual(["&&", "||"]);
  });

  it("reads digits before > as the fd, but not when quoted or part of a word", () => {
    const [item] = parse("echo x 2>/dev/null a2>f '2'>g");
    const command = item?.andOr.first;
    expect(command?.redirects.map((r) => r.fd)).toEqual([2, 1, 1]);
    expect(command?.words).toHaveLength(4);
  });

  it.each([
    ["; echo", 'unexpected ";"'],
    ["echo a &&", "unexpected end of input"],
    ["echo 'open", "unterminated quoted string"],
    ['echo "open', "unterminated quoted string"],
    ["echo >", 'unexpected end of input after ">"'],
    ["echo a | cat", "a pipe (|) is not supported by the fake shell"],
    ["echo $(pwd)", "command substitution $( … ) is not supported by the fake shell"],
    ["echo `pwd`", "command substitution (`…`) is not supported by the fake shell"],
    ["(echo)", "a subshell ( … ) is not supported by the fake shell"],
    ["cat < f", "input redirection (<) is not supported by the fake shell"],
    ["echo a;; echo b", 'unexpected ";;"'],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell syntax, not a JS template
    ["echo ${A:-x}", "${A:-x}: bad substitution"],
  ])("refuses %j", (source, message) => {
    expect(() => parse(source)).toThrow(new ShellSyntaxError(message));
  });

  it("reports a syntax error with exit 2 and runs nothing", async () => {
    const run = await sh("echo before; echo a |");
    expect(run).toMatchObject({ code: 2, stdout: "" });
    expect(run.stderr).toMatch(/^sh: syntax error: /);
  });
});

describe("fake shell: words and quoting", () => {
  it("keeps quoted blanks and joins adjacent parts into one word", async () => {
    const run = await sh(`echo 'a  b' "c  d" e'f'"g" \\$HOME "x\\"y" 'it''s'`);
    expect(run.stdout).toBe('a  b c  d efg $HOME x"y its\n');
  });

  it("expands variables from the env, unquoted ones split on blanks", async () => {
    const vars = { SPACED: " one  two ", EMPTY: "" };
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell syntax, not a JS template
    const ok = await sh('echo [$SPACED] ["$SPACED"] $EMPTY "$EMPTY" x${SPACED}y $HOME', { vars });
    expect(ok.stdout).toBe(`[ one two ] [ one  two ]  x one two y ${HOME_DIR}\n`);
  });

  it("keeps a lone $ and single-quoted $ literally, and ignores comments", async () => {
    const run = await sh("echo $ '$HOME' a#b # not this\n# nor this\necho done");
    expect(run.stdout).toBe("$ $HOME a#b\ndone\n");
  });

  it("sets variables, and passes prefix assignments to scripts only", async () => {
    const on = machine();
    put(on, "show.sh", "echo [$X]\n", true);
    const run = await sh("X=1; echo $X; X=2 ./show.sh; echo $X; Y='a b'; echo \"$Y\"", { on });
    expect(run.stdout).toBe("1\n[2]\n1\na b\n");
  });
});

describe("fake shell: sequences and exit codes", () => {
  it("runs && and || by the previous status, and reports $?", async () => {
    const run = await sh("false || echo a; true && echo b; false && echo never; echo $?; true || echo no");
    expect(run).toMatchObject({ code: 0, stdout: "a\nb\n1\n" });
  });

  it("returns the last status, or the exit code", async () => {
    expect((await sh("true; false")).code).toBe(1);
    expect((await sh("exit 3; echo after")).code).toBe(3);
    expect((await sh("false || exit 5")).code).toBe(5);
    expect((await sh("false; exit")).code).toBe(1);
    expect((await sh("exit 300")).code).toBe(44);
    const bad = await sh("exit nope");
    expect(bad).toMatchObject({ code: 2, stderr: "exit: Illegal number: nope\n" });
  });

  it("answers unknown commands with 127", async () => {
    const run = await sh("frobnicate --now; echo $?");
    expect(run).toMatchObject({ stdout: "127\n", stderr: "frobnicate: command not found\n" });
  });

  it("prints seq ranges, and echo -n", async () => {
    expect((await sh("seq 1 3; seq 2; seq 5 -2 1; echo -n x")).stdout).toBe("1\n2\n3\n1\n2\n5\n3\n1\nx");
    expect((await sh("seq a")).code).toBe(1);
  });
});

describe("fake shell: files, scripts and redirections", () => {
  it("sends output to stderr, to /dev/null, and into files", async () => {
    const run = await sh(
      "echo err >&2; echo gone 2>/dev/null >&2; echo a > f; echo b >> f; echo c 1>&2 2>/dev/null",
    );
    expect(run).toMatchObject({ stdout: "", stderr: "err\nc\n" });
    expect(text(run.on, "f")).toBe("a\nb\n");
  });

  it("truncates with > but keeps the exec bit, and creates files with a bare redirection", async () => {
    const on = machine();
    put(on, "x.sh", "old content\n", true);
    await sh("echo 'echo new' > x.sh; > empty", { on });
    expect(text(on, "x.sh")).toBe("echo new\n");
    expect(on.home.lookup("x.sh")).toMatchObject({ executable: true });
    expect(text(on, "empty")).toBe("");
    expect((await sh("./x.sh", { on })).stdout).toBe("new\n");
  });

  it("refuses redirections into missing folders, folders and outside the home", async () => {
    const on = machine();
    put(on, "dir/f", "");
    const run = await sh("echo a > no/f; echo $?; echo a > dir; echo a > /etc/x; echo a > ../x", { on });
    expect(run.stdout).toBe("2\n");
    expect(run.stderr).toBe(
      [
        "sh: cannot create no/f: Directory nonexistent",
        "sh: cannot create dir: Is a directory",
        "sh: cannot create /etc/x: Permission denied",
        "sh: cannot create ../x: Permission denied",
        "",
      ].join("\n"),
    );
  });

  it("cats files relative to the cwd or under $HOME, and reports missing ones", async () => {
    const on = machine();
    put(on, "sub/c.txt", "inside\n");
    const run = await sh("cat c.txt $HOME/sub/c.txt; cat nope; echo $?; pwd", { on, cwd: "sub" });
    expect(run.stdout).toBe(`inside\ninside\n1\n${HOME_DIR}/sub\n`);
    expect(run.stderr).toBe("cat: nope: No such file or directory\n");
  });

  it("runs scripts with ./ when executable and with sh always, with their own exit", async () => {
    const on = machine();
    put(on, "ok.sh", '#!/bin/sh\necho "hi $1"\nexit 7\necho never\n', true);
    put(on, "plain.sh", "echo plain\n");
    const run = await sh("./ok.sh you; echo $?; ./plain.sh; echo $?; sh plain.sh; ./missing; echo $?; ./", {
      on,
    });
    expect(run.stdout).toBe("hi you\n7\n126\nplain\n127\n");
    expect(run.stderr).toBe(
      "sh: ./plain.sh: permission denied\nsh: ./missing: not found\nsh: ./: permission denied\n",
    );
    expect(run.code).toBe(126);
    expect((await sh("sh -c 'echo inner; exit 4'; echo $?", { on })).stdout).toBe("inner\n4\n");
  });

  it("stops a script that runs itself forever", async () => {
    const on = machine();
    put(on, "loop.sh", "./loop.sh\n", true);
    const run = await sh("./loop.sh", { on });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/nested more than/);
  });
});

describe("fake shell: background processes", () => {
  it("gives $! a pid from 1000 that kill -0 sees until the process ends", async () => {
    const on = machine();
    const first = await sh("echo [$!]; sleep 0.05 & echo $!; kill -0 $! && echo alive", { on });
    expect(first.stdout).toBe(`[]\n${FIRST_PID}\nalive\n`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const later = await sh(`kill -0 ${FIRST_PID} 2>/dev/null && echo alive || echo gone`, { on });
    expect(later.stdout).toBe("gone\n");
  });

  it("kills a background process by pid", async () => {
    const on = machine();
    const run = await sh("sleep 30 & kill $!; kill -0 $! || echo killed; kill 4242", { on });
    expect(run.stdout).toBe("killed\n");
    expect(run.stderr).toBe(`kill: (${FIRST_PID}) - No such process\nkill: (4242) - No such process\n`);
  });

  it("kills the foreground and its background processes when the run's signal aborts", async () => {
    const on = machine();
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    await expect(sh("sleep 30 & sleep 30 & sleep 30", { on, signal: controller.signal })).rejects.toThrow(
      ShellKilled,
    );
    expect(on.processes.alive(FIRST_PID)).toBe(false);
    expect(on.processes.alive(FIRST_PID + 1)).toBe(false);
  });
});

describe("fake shell: runs", () => {
  const collect = async (command: string, extra: { timeoutMs?: number; maxOutputBytes?: number } = {}) => {
    const on = machine();
    const events = [];
    for await (const event of runCommand({
      machine: on,
      command,
      cwd: "",
      vars: { HOME: HOME_DIR },
      timeoutMs: extra.timeoutMs ?? 5_000,
      maxOutputBytes: extra.maxOutputBytes,
    })) {
      events.push(event);
    }
    return { events, on };
  };

  it("caps stdout and stderr together, marks the cut once and keeps the real exit code", async () => {
    const { events } = await collect("echo 12345 >&2; seq 1 300000; echo after", { maxOutputBytes: 100 });
    const stdout = events.flatMap((e) => (e.type === "stdout" ? [e.data] : [])).join("");
    expect(events.at(-1)).toEqual({ type: "exit", code: 0, truncated: true });
    expect(stdout.endsWith(OUTPUT_TRUNCATED_MARKER)).toBe(true);
    expect(Buffer.byteLength(stdout) - OUTPUT_TRUNCATED_MARKER.length).toBe(94);
  });

  it("times out with 124 and takes background processes with it", async () => {
    const { events, on } = await collect("sleep 30 & sleep 30", { timeoutMs: 50 });
    expect(events).toEqual([
      { type: "exit", code: 124, message: "command timed out after 50 ms", truncated: false },
    ]);
    expect(on.processes.alive(FIRST_PID)).toBe(false);
  });
});
