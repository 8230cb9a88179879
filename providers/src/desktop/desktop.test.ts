import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { type CommandEvent, type CommandRequest, type MachineRef, ProviderError } from "../contract/index.ts";
import { browsersIn } from "./browsers.ts";
import { createDesktopProvider, type DesktopProvider } from "./index.ts";
import { findOnPath, SAFE_PATH } from "./processes.ts";

/**
 * Desktop-only promises the shared suites (providers/testing/suites/) cannot see from outside: what a
 * command's environment holds, symlinks out of the home, process-tree cleanup, real screens.
 */

const OUTSIDE = "path is outside this computer's home";
/** Reads, listings, writes and deletes each, raced against a symlink swap. */
const RACE_OPS = 2_000;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

let homesDir = "";
let provider: DesktopProvider;

beforeAll(async () => {
  homesDir = await mkdtemp(join(tmpdir(), "cubicle-desktop-test-"));
  provider = createDesktopProvider({ homesDir });
});

afterAll(async () => {
  await provider.shutdown();
  await rm(homesDir, { recursive: true, force: true });
});

const OWNER = { computerId: "computer-desktop-test", workspaceId: "workspace-desktop-test" };

async function fresh(): Promise<MachineRef> {
  const homeKey = `desk-${randomBytes(5).toString("hex")}`;
  const { providerRef } = await provider.provision({ ...OWNER, homeKey, providerRef: null });
  return { ...OWNER, homeKey, providerRef };
}

async function collect(ref: MachineRef, request: CommandRequest) {
  let stdout = "";
  let stderr = "";
  let exit: Extract<CommandEvent, { type: "exit" }> | undefined;
  for await (const event of provider.run(ref, request)) {
    if (event.type === "stdout") stdout += event.data;
    else if (event.type === "stderr") stderr += event.data;
    else exit = event;
  }
  if (!exit) throw new Error("no exit event");
  return { stdout, stderr, exit };
}

async function refusal(attempt: Promise<unknown>): Promise<ProviderError> {
  const error = await attempt.then(
    () => new Error("expected a refusal, but the call succeeded"),
    (reason: unknown) => reason,
  );
  if (!(error instanceof ProviderError)) throw error;
  return error;
}

/** Gone, not merely killed: a zombie still answers kill(pid, 0) until it is reaped. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** `profile.exit_type` in a Chromium profile's Default/Preferences, once it can be read. */
function exitType(profile: string): string | null {
  try {
    const preferences = JSON.parse(readFileSync(join(profile, "Default", "Preferences"), "utf8"));
    return preferences?.profile?.exit_type ?? null;
  } catch {
    return null; // not written yet, or being rewritten
  }
}

async function eventually(probe: () => boolean, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (!probe()) {
    if (Date.now() > deadline) return false;
    await sleep(200);
  }
  return true;
}

const CHROMIUM = findOnPath("chromium", SAFE_PATH);
// headless, and without the sandbox, which needs user namespaces a test host (or root) may not have
const CHROMIUM_FLAGS =
  "--headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run about:blank";

/** Exited: no such process, or a zombie waiting to be reaped (whoever its parent is now). */
function exited(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return /^[ZX]/.test(stat.slice(stat.lastIndexOf(")") + 2));
  } catch {
    return true;
  }
}

async function waitUntilGone(pid: number, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (alive(pid)) {
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
  return true;
}

describe("desktop provider", () => {
  it("runs commands in a scrubbed environment that holds none of the server's secrets", async () => {
    const markers = {
      DATABASE_URL: "postgres://marker-database-url",
      BETTER_AUTH_SECRET: "marker-better-auth-secret",
      ENCRYPTION_KEY: "marker-encryption-key",
      E2B_API_KEY: "marker-e2b-api-key",
    };
    const saved = Object.fromEntries(Object.keys(markers).map((name) => [name, process.env[name]]));
    Object.assign(process.env, markers);
    try {
      const ref = await fresh();
      const run = await collect(ref, { command: "env", env: { GREETING: "hello" }, timeoutMs: 5_000 });
      expect(run.exit.code, run.stderr).toBe(0);
      for (const [name, value] of Object.entries(markers)) {
        expect(run.stdout).not.toContain(value);
        expect(run.stdout).not.toContain(`${name}=`);
      }
      const env = new Map(
        run.stdout
          .split("\n")
          .filter(Boolean)
          .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
      );
      expect(env.get("HOME")).toBe(join(await realpath(homesDir), ref.homeKey));
      expect(env.get("PATH")).toBe("/usr/local/bin:/usr/bin:/bin");
      expect(env.get("GREETING")).toBe("hello");
      expect(env.get("LANG")).toBe("C.UTF-8");
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it("refuses every way through a symlink that leaves the home, and deletes the link itself", async () => {
    const ref = await fresh();
    const made = await collect(ref, {
      command: "ln -s /etc leak && ln -s /etc/hostname name",
      timeoutMs: 5_000,
    });
    expect(made.exit.code, made.stderr).toBe(0);

    // Started one at a time, so no refusal waits unobserved while another runs.
    const attempts: (() => Promise<unknown>)[] = [
      () => provider.readFile(ref, "leak/passwd", { maxBytes: 100_000 }),
      () => provider.listFiles(ref, "leak"),
      () => provider.writeFile(ref, "leak/x", new Uint8Array([1])),
      () => provider.writeFile(ref, "leak/new/dir/x", new Uint8Array([1])),
      () => provider.deleteFile(ref, "leak/hostname"),
      () => provider.readFile(ref, "name", { maxBytes: 100_000 }),
      () => provider.writeFile(ref, "name", new Uint8Array([1])),
      () => collect(ref, { command: "pwd", cwd: "leak", timeoutMs: 5_000 }),
    ];
    for (const attempt of attempts) {
      const error = await refusal(attempt());
      expect(error.code).toBe("PATH_OUTSIDE_HOME");
      expect(error.message).toBe(OUTSIDE);
    }
    expect(existsSync("/etc/x")).toBe(false);
    expect(existsSync("/etc/new")).toBe(false);
    expect(existsSync("/etc/hostname")).toBe(true);

    // the links are listed as links, and deleting one removes the link, not its target
    const listed = await provider.listFiles(ref, "");
    expect(listed.map((entry) => [entry.name, entry.type])).toEqual([
      ["leak", "symlink"],
      ["name", "symlink"],
    ]);
    await provider.deleteFile(ref, "leak");
    await provider.deleteFile(ref, "name");
    expect(await provider.listFiles(ref, "")).toEqual([]);
    expect(existsSync("/etc/passwd")).toBe(true);
    expect(existsSync("/etc/hostname")).toBe(true);
  });

  it("keeps every file operation in the home while a program swaps a folder for a symlink", {
    timeout: 300_000,
  }, async () => {
    const ref = await fresh();
    const home = join(homesDir, ref.homeKey);
    const outside = await mkdtemp(join(tmpdir(), "cubicle-desktop-race-"));
    const marker = `OUTSIDE-${randomBytes(6).toString("hex")}`;
    const names = ["f", "g", "victim"];
    for (const name of [...names, "outside-only"]) writeFileSync(join(outside, name), `${marker}\n`);
    mkdirSync(join(home, "race", "d"), { recursive: true });
    for (const name of names) writeFileSync(join(home, "race", "d", name), `inside ${name}\n`);
    symlinkSync(outside, join(home, "race", "link"));
    // race/d and race/link exchanged atomically (renameat2 RENAME_EXCHANGE): race/d is by turns
    // the real folder and a symlink out of the home, with no moment in between
    const attacker = spawn(
      "perl",
      [
        "-e",
        'my ($sys, $race) = @ARGV; syscall($sys, -100, "$race/d", -100, "$race/link", 2) while 1',
        process.arch === "arm64" ? "276" : "316",
        join(home, "race"),
      ],
      { stdio: "ignore" },
    );
    onTestFinished(() => {
      attacker.kill("SIGKILL");
    });
    const seen: string[] = [];
    const tolerated = async (call: () => Promise<unknown>) => {
      try {
        return await call();
      } catch (error) {
        // refused or failed because the ground moved: fine; what must never happen is a leak
        if (!(error instanceof ProviderError)) throw error;
        return null;
      }
    };
    try {
      for (let i = 0; i < RACE_OPS; i++) {
        const name = names[i % names.length] ?? "f";
        const data = await tolerated(() => provider.readFile(ref, `race/d/${name}`, { maxBytes: 1_000 }));
        if (data && Buffer.from(data as Uint8Array).includes(marker)) seen.push(`read ${name}`);
        const listed = (await tolerated(() => provider.listFiles(ref, "race/d"))) as
          | { name: string }[]
          | null;
        if (listed?.some((entry) => entry.name === "outside-only")) seen.push("listing");
        await tolerated(() => provider.writeFile(ref, `race/d/written-${i}`, new Uint8Array([1])));
        await tolerated(() => provider.deleteFile(ref, `race/d/${i % 2 ? "victim" : `written-${i - 1}`}`));
      }
    } finally {
      attacker.kill("SIGKILL");
    }
    expect(seen).toEqual([]);
    // nothing written, nothing deleted outside the home
    expect(readdirSync(outside).sort()).toEqual([...names, "outside-only"].sort());
    await rm(outside, { recursive: true, force: true });
  });

  it("kills a grandchild when a command times out", async () => {
    const ref = await fresh();
    const run = await collect(ref, { command: "sh -c 'sleep 60 & echo $!; wait'", timeoutMs: 500 });
    expect(run.exit).toMatchObject({
      code: 124,
      message: "command timed out after 500 ms",
      truncated: false,
    });
    const pid = Number(run.stdout.trim());
    expect(Number.isInteger(pid) && pid > 0, run.stdout).toBe(true);
    expect(await waitUntilGone(pid, 5_000), `grandchild ${pid} is gone`).toBe(true);
  });

  it("does not wait for a child that escaped the process group", async () => {
    const ref = await fresh();
    const started = Date.now();
    const run = await collect(ref, { command: "setsid sleep 30 & echo $!", timeoutMs: 10_000 });
    const pid = Number(run.stdout.trim());
    try {
      expect(run.exit).toMatchObject({ code: 0, truncated: false });
      // well short of the escaped sleep's 30 s
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      if (pid > 0 && alive(pid)) process.kill(pid, "SIGKILL");
    }
  });

  it("observes a real 1280x800 PNG, and typing into the xterm changes it", async () => {
    expect(provider.capabilities).toEqual({ graphical: true, maxScreens: 8, pty: false, egress: ["open"] });
    const ref = await fresh();
    const first = await provider.observe(ref, 0);
    const png = Buffer.from(first.png);
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([1280, 800]);
    expect([first.width, first.height]).toEqual([1280, 800]);

    const result = await provider.act(ref, 0, [
      { type: "move", x: 300, y: 200 },
      { type: "type", text: "echo typed-into-cubicle" },
      { type: "key", key: "Return" },
    ]);
    expect(result).toEqual({ completed: 3, total: 3 });

    let changed = false;
    for (let attempt = 0; attempt < 30 && !changed; attempt++) {
      await sleep(100);
      changed = !Buffer.from((await provider.observe(ref, 0)).png).equals(png);
    }
    expect(changed, "the screenshot changed after typing").toBe(true);
    const latest = await provider.observe(ref, 0);
    expect(latest.cursor).toEqual({ x: 300, y: 200 });
    // no window manager: the window under the pointer is the one typing reaches
    expect(latest.activeWindow).toEqual(expect.any(String));
  });

  it("serves screens over view-only VNC that speaks RFB 3.8, and stop closes them", async () => {
    const ref = await fresh();
    const target = await provider.openScreen(ref, 1);
    if (target.kind !== "vnc") throw new Error(`expected a vnc target, got ${target.kind}`);
    expect(target.host).toBe("127.0.0.1");
    expect(target.password).toMatch(/^[A-Za-z0-9]{8}$/);

    const banner = await new Promise<string>((resolve, reject) => {
      const socket = connect({ host: target.host, port: target.port });
      let received = "";
      socket.setEncoding("latin1");
      socket.on("data", (chunk: string) => {
        received += chunk;
        if (received.length >= 12) {
          socket.destroy();
          resolve(received.slice(0, 12));
        }
      });
      socket.on("error", reject);
    });
    expect(banner).toBe("RFB 003.008\n");

    // screen 0 is what commands see as DISPLAY; screen 1 is not
    const display = await collect(ref, { command: 'echo "[$DISPLAY]"', timeoutMs: 5_000 });
    expect(display.stdout).toBe("[]\n");

    await provider.stop(ref);
    const refused = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: target.host, port: target.port });
      socket.on("connect", () => {
        socket.destroy();
        resolve(false);
      });
      socket.on("error", () => resolve(true));
    });
    expect(refused, "the VNC server is gone after stop").toBe(true);
    await expect(provider.openScreen(ref, 1)).rejects.toMatchObject({ code: "MACHINE_STOPPED" });
    await expect(provider.openScreen(ref, 8)).rejects.toMatchObject({ code: "INVALID_SCREEN" });
  });

  it("answers GRAPHICAL_UNAVAILABLE when the X tools are not on PATH", async () => {
    const path = process.env.PATH;
    process.env.PATH = "/nonexistent";
    let bare: DesktopProvider;
    try {
      bare = createDesktopProvider({ homesDir });
    } finally {
      process.env.PATH = path;
    }
    try {
      expect(bare.capabilities.graphical).toBe(false);
      const { providerRef } = await bare.provision({ ...OWNER, homeKey: "bare", providerRef: null });
      const ref = { ...OWNER, homeKey: "bare", providerRef };
      await expect(bare.observe(ref, 0)).rejects.toMatchObject({ code: "GRAPHICAL_UNAVAILABLE" });
      await expect(bare.openScreen(ref, 0)).rejects.toMatchObject({ code: "GRAPHICAL_UNAVAILABLE" });
      await expect(bare.act(ref, 0, [{ type: "move", x: 1, y: 1 }])).rejects.toMatchObject({
        code: "GRAPHICAL_UNAVAILABLE",
      });
      // commands still run: they use their own fixed PATH, not the service's
      const run = bare.run(ref, { command: "echo ok", timeoutMs: 5_000 });
      let out = "";
      for await (const event of run) if (event.type === "stdout") out += event.data;
      expect(out).toBe("ok\n");
    } finally {
      await bare.shutdown();
    }
  });

  // each close first waits out Chromium's cookie commit interval (BROWSER_SETTLE_MS)
  const CLOSE_TIMEOUT_MS = 180_000;
  it(
    "closes the Chromium whose profile is in the home gracefully, on request and on stop, and no other",
    async () => {
      // the test command installs Debian's chromium; without it this test fails rather than skips
      expect(CHROMIUM, "chromium is on the PATH").not.toBeNull();
      const ref = await fresh();
      const home = join(await realpath(homesDir), ref.homeKey);
      const profile = join(home, ".browser-profiles", "chromium");
      const outsideProfile = await mkdtemp(join(tmpdir(), "cubicle-other-profile-"));
      // another computer's (or the host's) browser: not this machine's to close
      const outsider = spawn(
        CHROMIUM as string,
        [`--user-data-dir=${outsideProfile}`, ...CHROMIUM_FLAGS.split(" ")],
        {
          detached: true,
          stdio: "ignore",
        },
      );
      const launch = `setsid -f chromium --user-data-dir="$HOME/.browser-profiles/chromium" ${CHROMIUM_FLAGS} </dev/null >/dev/null 2>&1`;
      try {
        // started by a bot, detached from its command
        expect((await collect(ref, { command: launch, timeoutMs: 10_000 })).exit.code).toBe(0);
        expect(await eventually(() => browsersIn(home).length === 1, 15_000), "the browser is found").toBe(
          true,
        );
        const [pid] = browsersIn(home);
        expect(pid).not.toBe(outsider.pid);
        // Chromium marks its profile "Crashed" while it runs (written about 10 s after it starts)
        expect(await eventually(() => exitType(profile) === "Crashed", 30_000)).toBe(true);

        await provider.closeBrowsers(ref);
        expect(exited(pid as number), "the browser has exited").toBe(true);
        expect(browsersIn(home)).toEqual([]);
        // SIGTERM: Chromium ended its session and wrote its profile; a SIGKILL would leave "Crashed"
        expect(exitType(profile)).toBe("SessionEnded");
        expect(outsider.pid !== undefined && alive(outsider.pid), "the other browser still runs").toBe(true);
        const again = Date.now();
        await provider.closeBrowsers(ref);
        await provider.settleBrowsers(ref);
        expect(Date.now() - again, "nothing to close or wait for").toBeLessThan(5_000);

        // stopping the machine closes its browsers too
        expect((await collect(ref, { command: launch, timeoutMs: 10_000 })).exit.code).toBe(0);
        expect(await eventually(() => browsersIn(home).length === 1, 15_000)).toBe(true);
        await provider.stop(ref);
        expect(browsersIn(home)).toEqual([]);
        expect(outsider.pid !== undefined && alive(outsider.pid)).toBe(true);
      } finally {
        for (const pid of [...browsersIn(home), outsider.pid ?? 0]) {
          if (pid > 0 && alive(pid)) process.kill(pid, "SIGKILL");
        }
        // a killed Chromium's helpers may still be writing into its profile for a moment
        await rm(outsideProfile, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
      }
    },
    CLOSE_TIMEOUT_MS,
  );

  it("keeps a home private and its parents out of reach", async () => {
    const ref = await fresh();
    const home = join(await realpath(homesDir), ref.homeKey);
    expect(statSync(home).mode & 0o777).toBe(0o700);
    await provider.writeFile(ref, "tool", new Uint8Array([0x23]), { executable: true });
    expect(statSync(join(home, "tool")).mode & 0o777).toBe(0o755);
    expect(readFileSync(join(home, "tool"), "utf8")).toBe("#");
  });
});
