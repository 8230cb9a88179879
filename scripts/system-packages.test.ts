// A fresh machine once broke because a script ran `debootstrap` and nothing installed it. This test
// finds every program the repository's host-side code runs and fails when
// scripts/lib/system-packages.mjs (the one list `npm start` and `npm test` install from) or its base
// system does not cover it, and checks that the list's packages really provide those programs here.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { basename, join } from "node:path";
import { describe, expect, it } from "vitest";
import { root } from "./lib/run.mjs";
import { BASE_PROGRAMS, SYSTEM_PACKAGES } from "./lib/system-packages.mjs";

interface Launch {
  program: string;
  file: string;
  line: number;
}

/** A string literal with no interpolation; group 1, 2 or 3 is its text. */
const DOUBLE_QUOTED = String.raw`"((?:[^"\\\n]|\\.)*)"`;
const SINGLE_QUOTED = String.raw`'((?:[^'\\\n]|\\.)*)'`;
const TEMPLATE = String.raw`\`((?:[^\`\\$]|\\.|\$(?!\{))*)\``;
const LITERAL = `(?:${DOUBLE_QUOTED}|${SINGLE_QUOTED}|${TEMPLATE})`;

/** Calls whose first argument is a program: child_process and the repository's wrappers of it. */
const LAUNCHERS = [
  "spawn",
  "spawnSync",
  "execFile",
  "execFileSync",
  String.raw`promisify\(execFile\)`,
  "runOrExit", // scripts/lib/run.mjs
  "runForeground", // scripts/lib/run.mjs
  "succeeds", // scripts/lib/docker-engine.mjs
  "startChild", // bench/proxy/processes.ts
  // lookups of programs that are then run
  "findOnPath", // providers/src/desktop/processes.ts
  "onPath", // scripts/lib/system-packages.mjs
];

/** Calls whose first argument is a shell command line. */
const SHELL_LAUNCHERS = ["exec", "execSync"];

/** Words that are not programs (shell builtins and keywords), and words that run the word after them. */
const SHELL_BUILTINS = new Set(
  ": [ } break case cd continue done esac eval exec exit export false fi for local printf read return set shift test trap true unset wait".split(
    " ",
  ),
);
const SHELL_KEYWORDS = new Set("! { do elif else if then time until while".split(" "));
const RUNS_NEXT = new Set(["env", "nice", "nohup", "timeout", "xargs"]);

const literalText = (match: RegExpExecArray, first: number) =>
  match[first] ?? match[first + 1] ?? (match[first + 2] as string);

/** The program a literal names: its basename, or nothing for paths into node_modules and empty text. */
function programOf(text: string): string | undefined {
  if (text === "" || text.includes("node_modules") || /[\s$]/.test(text)) return undefined;
  return basename(text);
}

/** The programs a shell command line runs: each command's first word, `command -v X`, `xargs X`. */
function shellPrograms(script: string): string[] {
  const programs: string[] = [];
  for (const segment of script.split(/\|\||&&|[|;&\n()`]|\$\(/)) {
    const words = segment.trim().split(/\s+/);
    for (let i = 0; i < words.length; i++) {
      const word = (words[i] as string).replace(/^["']|["']$/g, "");
      if (/^[A-Za-z_]\w*=/.test(word) || SHELL_KEYWORDS.has(word)) continue;
      if (word === "command" && /^-[vV]$/.test(words[i + 1] ?? "")) {
        const looked = programOf((words[i + 2] ?? "").replace(/^["']|["']$/g, ""));
        if (looked) programs.push(looked);
        break;
      }
      if (SHELL_BUILTINS.has(word) || word.startsWith(">") || word.startsWith("<")) break;
      const program = programOf(word);
      if (!program) break;
      programs.push(program);
      if (!RUNS_NEXT.has(program)) break;
      while (words[i + 1]?.startsWith("-")) i++;
      if (program === "timeout") i++; // its duration
    }
  }
  return programs;
}

/** The text of the array literal starting at `from` (after optional `, ` or `, args: `), or "". */
function argumentArray(text: string, from: number): string {
  const start = /\s*,\s*(?:args\s*:\s*)?\[/y;
  start.lastIndex = from;
  if (!start.test(text)) return "";
  let depth = 1;
  let i = start.lastIndex;
  while (i < text.length && depth > 0) {
    const char = text[i] as string;
    if (char === '"' || char === "'" || char === "`") {
      for (i++; i < text.length && text[i] !== char; i++) if (text[i] === "\\") i++;
    } else if (char === "[") depth++;
    else if (char === "]") depth--;
    i++;
  }
  return text.slice(from, i);
}

/**
 * Every literal program `text` (the source of `file`) launches or looks up on PATH: the first argument
 * of the launchers above and of wrappers the file defines (`const run = promisify(execFile)`,
 * `const run = (program: string, …)`), `{ cmd: "X", args }` descriptors, the first word of `exec`
 * command lines, the scripts given to `sh -c`/`bash -c`, what `runuser … --` runs, and `command -v X`.
 */
function scan(file: string, text: string): Launch[] {
  const found: { program: string; index: number }[] = [];
  const add = (program: string | undefined, index: number) => {
    if (program) found.push({ program, index });
  };

  const local = [
    ...text.matchAll(/\bconst\s+(\w+)\s*=\s*promisify\((?:execFile|exec)\)/g),
    ...text.matchAll(/\b(?:function\s+(\w+)\s*\(|const\s+(\w+)\s*=\s*(?:async\s*)?\()\s*program\b/g),
  ].map((match) => (match[1] ?? match[2]) as string);
  const launchers = [...LAUNCHERS, ...local].join("|");

  const programLiterals = new RegExp(
    String.raw`(?:(?<![\w$])(?:${launchers})\s*\(\s*|\bcmd\s*:\s*)${LITERAL}`,
    "g",
  );
  for (const match of text.matchAll(programLiterals)) {
    const index = match.index + match[0].length;
    const program = programOf(literalText(match, 1));
    add(program, index - 1);
    const args = argumentArray(text, index);
    if (program === "sh" || program === "bash" || program === "dash") {
      const script = new RegExp(String.raw`["']-c["']\s*,\s*${LITERAL}`).exec(args);
      if (script) for (const run of shellPrograms(literalText(script, 1))) add(run, index + script.index);
    }
    if (program === "runuser") {
      const target = new RegExp(String.raw`["']--["']\s*,\s*${LITERAL}`).exec(args);
      if (target) add(programOf(literalText(target, 1)), index + target.index);
    }
  }

  const shellLines = new RegExp(
    String.raw`(?<![\w$.])(?:${SHELL_LAUNCHERS.join("|")})\s*\(\s*${LITERAL}`,
    "g",
  );
  for (const match of text.matchAll(shellLines)) {
    for (const program of shellPrograms(literalText(match, 1))) add(program, match.index);
  }

  for (const match of text.matchAll(/\bcommand -v\s+([\w.+/-]+)/g))
    add(programOf(match[1] as string), match.index);

  const launches = new Map<string, Launch>();
  for (const { program, index } of found.sort((a, b) => a.index - b.index)) {
    const line = text.slice(0, index).split("\n").length;
    launches.set(`${program}:${line}`, { program, file, line });
  }
  return [...launches.values()];
}

const covered = new Set<string>([...SYSTEM_PACKAGES.flatMap((entry) => entry.programs), ...BASE_PROGRAMS]);

function uncovered(launches: Launch[]): string[] {
  return launches
    .filter((launch) => !covered.has(launch.program))
    .map(
      (launch) =>
        `${launch.program} (run at ${launch.file}:${launch.line}) is in no SYSTEM_PACKAGES entry and not in BASE_PROGRAMS: add its Debian package to scripts/lib/system-packages.mjs`,
    );
}

/** The host-side sources: tracked code outside the images' own files and generated types. */
function repositorySources(): string[] {
  return execFileSync("git", ["ls-files", "-z", "--", "*.ts", "*.mjs", "*.js", "*.sh"], {
    cwd: root,
    encoding: "utf8",
  })
    .split("\0")
    .filter(
      (file) =>
        file !== "" &&
        !file.startsWith("computer-image/rootfs/") &&
        // scripts that run inside the service images, on the packages their Dockerfile installs
        !file.startsWith("deploy/images/") &&
        file !== "client/src/schema.d.ts" &&
        // this file's own example sources are not launches
        file !== "scripts/system-packages.test.ts" &&
        existsSync(join(root, file)),
    );
}

/** Every file named `program` in this process's PATH (not only the first: a stand-in may shadow it). */
function onPathHere(program: string): string[] {
  return (process.env.PATH ?? "")
    .split(":")
    .filter(Boolean)
    .map((dir) => join(dir, program))
    .filter((file) => existsSync(file));
}

describe("system packages", () => {
  it("the scanner finds literal launches in a source text and reports a program nothing installs", () => {
    const source = [
      'import { spawnSync } from "node:child_process";',
      'spawnSync("frobnicate", ["--all"]);',
      "runOrExit(",
      '  "/usr/sbin/debootstrap",',
      '  ["--variant=minbase", suite, dir],',
      ");",
      'spawn("bash", ["-o", "pipefail", "-c", `tar -C "$1" -c . | docker import - "$2"`, "x", dir]);',
      'if (!findOnPath("Xvfb")) spawn(process.execPath, [join(root, "node_modules", ".bin", "tsx")]);',
      "spawn(program, args);",
    ].join("\n");
    const launches = scan("scripts/example.mjs", source);
    expect(launches).toEqual([
      { program: "frobnicate", file: "scripts/example.mjs", line: 2 },
      { program: "debootstrap", file: "scripts/example.mjs", line: 4 },
      { program: "bash", file: "scripts/example.mjs", line: 7 },
      { program: "tar", file: "scripts/example.mjs", line: 7 },
      { program: "docker", file: "scripts/example.mjs", line: 7 },
      { program: "Xvfb", file: "scripts/example.mjs", line: 8 },
    ]);
    expect(uncovered(launches)).toEqual([
      "frobnicate (run at scripts/example.mjs:2) is in no SYSTEM_PACKAGES entry and not in BASE_PROGRAMS: add its Debian package to scripts/lib/system-packages.mjs",
    ]);
  });

  it("the scanner reads shell command lines, runuser targets and local wrappers", () => {
    const source = [
      "const run = promisify(execFile);",
      'await run("x11vnc", ["-storepasswd", password, file]);',
      'const server = { cmd: "runuser", args: ["-u", "postgres", "--", "/usr/bin/pg_dump", "-c", "x"] };',
      'execSync("LC_ALL=C find . -type f | xargs -0 sha256sum && command -v websockify >/dev/null");',
      'spawn("sh", ["-c", "while :; do head -c 10 /dev/urandom; sleep 1; done"]);',
    ].join("\n");
    expect(scan("x.ts", source).map((launch) => `${launch.program}:${launch.line}`)).toEqual([
      "x11vnc:2",
      "runuser:3",
      "pg_dump:3",
      "find:4",
      "xargs:4",
      "sha256sum:4",
      "websockify:4",
      "sh:5",
      "head:5",
      "sleep:5",
    ]);
  });

  it("covers every program the host-side code runs with a system package or the base system", () => {
    const launches = repositorySources().flatMap((file) =>
      scan(file, readFileSync(join(root, file), "utf8")),
    );
    // the scan sees the launches it exists for (so an empty result cannot pass by accident)
    for (const program of [
      "debootstrap",
      "docker",
      "dockerd",
      "Xvfb",
      "x11vnc",
      "iptables",
      "initdb",
      "websockify",
    ]) {
      expect(
        launches.some((launch) => launch.program === program),
        `the scan finds ${program}`,
      ).toBe(true);
    }
    expect(uncovered(launches)).toEqual([]);
  });

  it("has each package provide its programs on this machine (npm test installs them all)", () => {
    const filesOf = (pkg: string): string[] | undefined => {
      const listed = spawnSync("dpkg", ["-L", pkg], { encoding: "utf8" });
      return listed.status === 0 ? listed.stdout.split("\n").filter(Boolean) : undefined;
    };
    // apt installs a package's Depends with it: postgresql's server binaries are in postgresql-<N>,
    // iptables comes with docker.io, convert and import with imagemagick-6.q16
    const dependsOf = (pkg: string): string[] =>
      execFileSync("dpkg-query", ["-W", `-f=\${Pre-Depends},\${Depends}`, pkg], { encoding: "utf8" })
        .split(/[,|]/)
        .map((dependency) =>
          dependency
            .trim()
            .replace(/\s*\(.*\)$/, "")
            .replace(/:any$/, ""),
        )
        .filter(Boolean);
    const provides = (files: string[], program: string) => {
      const names = new Set(files.map((file) => basename(file)));
      // an alternatives link (iptables, convert) is in no package's list; what it resolves to is
      return (
        names.has(program) || onPathHere(program).some((file) => names.has(basename(realpathSync(file))))
      );
    };

    const problems: string[] = [];
    for (const entry of SYSTEM_PACKAGES) {
      const own = filesOf(entry.pkg);
      if (!own) {
        problems.push(`${entry.pkg} is not installed here (dpkg -L ${entry.pkg} fails)`);
        continue;
      }
      const depends = dependsOf(entry.pkg);
      let withDepends: string[] | undefined; // listed only when needed: chromium has many
      for (const program of entry.programs) {
        if (provides(own, program)) continue;
        withDepends ??= [...own, ...depends.flatMap((dependency) => filesOf(dependency) ?? [])];
        if (!provides(withDepends, program)) {
          problems.push(`${entry.pkg} (with its Depends: ${depends.join(" ")}) does not provide ${program}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it("has the base programs on PATH", () => {
    const missing = BASE_PROGRAMS.filter((program) => onPathHere(program).length === 0);
    expect(missing).toEqual([]);
  });
});
