/**
 * The supervisor against the real Docker engine and computer image: runs only where
 * `cubicle-computer:latest` is present. Starts the real process (src/main.ts) on a free port with
 * a temporary DATA_DIR, as the api would use it through the client.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { holdVncConnection, vncAccepts, vncAnswers } from "@cubicle/host/testing/vnc";
import { type CommandEvent, OUTPUT_TRUNCATED_MARKER } from "@cubicle/providers/contract";
import {
  type ComputerRef,
  createSupervisorClient,
  type SupervisorClient,
  SupervisorError,
} from "@cubicle/providers/supervisor-wire";
import Docker from "dockerode";
import { extract } from "tar-stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { distinctPixels } from "../../src/testing/png.ts";

const IMAGE = "cubicle-computer:latest";

const SUPERVISOR_DIR = fileURLToPath(new URL("../..", import.meta.url));
const TOKEN = randomBytes(24).toString("hex");
const LONG = { timeout: 240_000 };

interface Process {
  child: ChildProcess;
  url: string;
}

function startProcess(dataDir: string): Promise<Process> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: SUPERVISOR_DIR,
    env: {
      PATH: process.env.PATH,
      SANDBOX_SUPERVISOR_TOKEN: TOKEN,
      DATA_DIR: dataDir,
      SUPERVISOR_PORT: "0",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return new Promise((resolve, reject) => {
    let output = "";
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const url = /listening on (http:\/\/\S+)/.exec(output)?.[1];
      if (url) resolve({ child, url });
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => reject(new Error(`the supervisor exited (${code}): ${output}`)));
  });
}

async function stopProcess(process: Process | undefined, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (!process || process.child.exitCode !== null) return;
  const exited = new Promise((resolve) => process.child.once("exit", resolve));
  process.child.kill(signal);
  await exited;
}

function rssKb(pid: number | undefined): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
}

async function events(client: SupervisorClient, ref: ComputerRef, command: string, timeoutMs = 30_000) {
  const all: CommandEvent[] = [];
  for await (const event of client.exec(ref, { command, timeoutMs })) all.push(event);
  return all;
}

async function run(client: SupervisorClient, ref: ComputerRef, command: string) {
  const all = await events(client, ref, command);
  const exit = all.at(-1);
  return {
    stdout: all.map((event) => (event.type === "stdout" ? event.data : "")).join(""),
    stderr: all.map((event) => (event.type === "stderr" ? event.data : "")).join(""),
    code: exit?.type === "exit" ? exit.code : -1,
  };
}

async function failure(promise: Promise<unknown>): Promise<SupervisorError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof SupervisorError) return error;
    throw error;
  }
  throw new Error("expected a SupervisorError");
}

async function bytesOf(stream: ReadableStream<Uint8Array>): Promise<Buffer> {
  return Buffer.from(await new Response(stream).arrayBuffer());
}

async function tarNames(tar: Buffer): Promise<string[]> {
  const names: string[] = [];
  const reader = extract();
  reader.end(tar);
  for await (const entry of reader) {
    names.push(entry.header.name);
    entry.resume();
  }
  return names;
}

/** One file's bytes from a tar, or null when the tar has no such file. */
async function tarFile(tar: Buffer, name: string): Promise<Buffer | null> {
  let found: Buffer | null = null;
  const reader = extract();
  reader.end(tar);
  for await (const entry of reader) {
    if (entry.header.name !== name) {
      entry.resume();
      continue;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of entry) chunks.push(Buffer.from(chunk as Uint8Array));
    found = Buffer.concat(chunks);
  }
  return found;
}

/** Each entry of a tar by name, with what a checkpoint keeps of it. */
async function tarEntries(tar: Buffer): Promise<Map<string, string>> {
  const entries = new Map<string, string>();
  const reader = extract();
  reader.end(tar);
  for await (const entry of reader) {
    const { name, type, mode, mtime, linkname } = entry.header;
    const chunks: Buffer[] = [];
    for await (const chunk of entry) chunks.push(Buffer.from(chunk as Uint8Array));
    const content = createHash("sha256").update(Buffer.concat(chunks)).digest("hex");
    entries.set(name, JSON.stringify([type, mode, mtime?.getTime(), linkname, content]));
  }
  return entries;
}

/**
 * What Chromium's profile says about how it last ended (`profile.exit_type` in Default/Preferences):
 * "Crashed" from about 10 s after it starts (its preferences are written on a 10 s timer) until it
 * shuts down cleanly, then "SessionEnded" (after SIGTERM) or "Normal" (quit by its user). A
 * SIGKILLed Chromium leaves "Crashed".
 */
function exitType(preferences: Buffer | string | null): string | null {
  if (preferences === null) return null;
  try {
    const parsed = JSON.parse(preferences.toString()) as { profile?: { exit_type?: string } };
    return parsed.profile?.exit_type ?? null;
  } catch {
    return null; // being rewritten right now
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// npm test starts the Docker engine and builds the image first (scripts/lib/docker-engine.mjs).
describe("the supervisor on the real engine", () => {
  const docker = new Docker();
  const suffix = randomBytes(4).toString("hex");
  const ref: ComputerRef = {
    homeKey: `it-${suffix}`,
    computerId: `computer-${suffix}`,
    workspaceId: "ws-it",
  };
  const other: ComputerRef = {
    homeKey: `it-${suffix}-b`,
    computerId: `computer-${suffix}-b`,
    workspaceId: "ws-it",
  };
  let dataDir = "";
  let supervisor: Process | undefined;
  let client: SupervisorClient;
  let providerRef = "";
  let screenOnePassword = "";

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "cubicle-supervisor-it-"));
    supervisor = await startProcess(dataDir);
    client = createSupervisorClient({ baseUrl: supervisor.url, token: TOKEN });
  }, 60_000);

  afterAll(async () => {
    for (const name of [ref.homeKey, other.homeKey]) {
      await docker
        .getContainer(`cubicle-${name}`)
        .remove({ force: true })
        .catch(() => undefined);
    }
    await stopProcess(supervisor);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it("reports the engine and the image on /health", async () => {
    const health = await client.health();
    expect(health).toMatchObject({ ok: true, docker: "ok", image: { ref: IMAGE } });
    expect(health.image.id).toMatch(/^sha256:/);
  });

  it("creates a hardened computer", LONG, async () => {
    const created = await client.create(ref);
    expect(created).toMatchObject({ fresh: true, homeCreated: true, state: "running" });
    providerRef = created.providerRef;

    const managed = await docker.listContainers({ filters: { label: ["cubicle.managed=true"] } });
    expect(managed.flatMap((container) => container.Names)).toContain(`/cubicle-${ref.homeKey}`);

    const info = await docker.getContainer(`cubicle-${ref.homeKey}`).inspect();
    expect(info.Id).toBe(providerRef);
    expect(info.Config.User).toBe("1000:1000");
    expect(info.Config.Labels).toMatchObject({
      "cubicle.managed": "true",
      "cubicle.homeKey": ref.homeKey,
      "cubicle.computerId": ref.computerId,
      "cubicle.workspaceId": ref.workspaceId,
    });
    expect(info.HostConfig.ShmSize).toBe(268435456);
    expect(info.HostConfig.CapDrop).toEqual(["ALL"]);
    expect(info.HostConfig.CapAdd ?? []).toEqual([]);
    expect(info.HostConfig.SecurityOpt).toContain("no-new-privileges");
    expect(info.HostConfig.Memory).toBe(2048 * 1024 * 1024);
    expect(info.HostConfig.NanoCpus).toBe(1e9);
    expect(info.HostConfig.PidsLimit).toBe(512);
    expect(info.HostConfig.NetworkMode).toBe("cubicle-computers");
    expect(info.Mounts).toEqual([
      expect.objectContaining({
        Type: "bind",
        Source: join(dataDir, "homes", ref.homeKey),
        Destination: "/home/cubicle",
      }),
    ]);
    const published = Object.entries(info.NetworkSettings.Ports ?? {});
    expect(published.map(([port]) => port).sort()).toEqual(
      Array.from({ length: 16 }, (_, i) => `${6080 + i}/tcp`).sort(),
    );
    for (const [, bindings] of published) {
      expect(bindings?.length).toBeGreaterThan(0);
      for (const binding of bindings ?? []) expect(binding.HostIp).toBe("127.0.0.1");
    }
    const network = await docker.getNetwork("cubicle-computers").inspect();
    expect(network.Options?.["com.docker.network.bridge.enable_icc"]).toBe("false");

    const status = await client.status(ref);
    expect(status).toMatchObject({ status: "running", providerRef });
    expect(status.ports["6080"]).toBeGreaterThan(0);
  });

  it(
    "diagnoses its computers against the spec, and names a container started by hand on their network",
    LONG,
    async () => {
      const stranger = await docker.createContainer({
        Image: IMAGE,
        name: `handmade-${suffix}`,
        Cmd: ["sleep", "60"],
        HostConfig: { NetworkMode: "cubicle-computers", AutoRemove: true },
      });
      try {
        const diagnosis = await client.diagnose();
        expect(diagnosis.health).toMatchObject({ ok: true, docker: "ok" });
        // the image was built from the sources beside this supervisor (npm test builds it first)
        expect(diagnosis.imageVersion.built).toMatch(/^[0-9a-f]{12}$/);
        expect(diagnosis.imageVersion.expected).toBe(diagnosis.imageVersion.built);
        expect(diagnosis.dataDirProblem).toBeNull();
        // run as root on the host, it reads the rule itself
        expect(diagnosis.hostFirewall).toBe("on");
        expect(diagnosis.homes).toContain(ref.homeKey);
        // only its own: computers of other supervisors on this engine have homes elsewhere
        expect(diagnosis.computers).toEqual([
          {
            name: `cubicle-${ref.homeKey}`,
            homeKey: ref.homeKey,
            status: "running",
            imageCurrent: true,
            settingsCurrent: true,
            problems: [],
          },
        ]);
        expect(diagnosis.strangers).toContainEqual({ name: `handmade-${suffix}`, image: IMAGE });
        expect(diagnosis.strangers.map((container) => container.name)).not.toContain(
          `cubicle-${ref.homeKey}`,
        );
      } finally {
        await stranger.remove({ force: true });
      }
      await expect(
        createSupervisorClient({ baseUrl: supervisor?.url ?? "", token: "x".repeat(48) }).diagnose(),
      ).rejects.toMatchObject({ status: 401, code: "UNAUTHORIZED" });
    },
  );

  it("keeps computers away from the host itself", LONG, async () => {
    const health = await client.health();
    expect(health.hostFirewall, "the test command runs as root, where the firewall rule is set").toBe("on");
    // Stands in for any host service on all interfaces, such as a Postgres server.
    const server = createServer((socket) => socket.end("host\n"));
    await new Promise<void>((resolve) => server.listen(0, "0.0.0.0", resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const info = await docker.getContainer(`cubicle-${ref.homeKey}`).inspect();
      const gateway = info.NetworkSettings.Networks["cubicle-computers"]?.Gateway;
      const supervisorPort = new URL(supervisor?.url ?? "").port;
      for (const target of [port, supervisorPort]) {
        const probe = await run(
          client,
          ref,
          `timeout 5 bash -c 'exec 3<>/dev/tcp/${gateway}/${target} && cat <&3' && echo reached || echo blocked`,
        );
        expect(probe.stdout.trim(), `port ${target}`).toBe("blocked");
      }
    } finally {
      server.close();
    }
  });

  it("runs commands with separate stdout, stderr and exit code, as the computer's user", LONG, async () => {
    const all = await events(client, ref, "echo out; echo err >&2; pwd; id -u; exit 3");
    expect(all.at(-1)).toEqual({ type: "exit", code: 3, truncated: false });
    const result = await run(client, ref, "echo out; echo err >&2; pwd; id -u; exit 3");
    expect(result).toEqual({ stdout: "out\n/home/cubicle\n1000\n", stderr: "err\n", code: 3 });

    let seen = "";
    for await (const event of client.exec(ref, {
      command: 'printf "%s in %s" "$GREETING" "$(pwd)"',
      env: { GREETING: "hello" },
      cwd: ".",
      timeoutMs: 10_000,
    })) {
      if (event.type === "stdout") seen += event.data;
    }
    expect(seen).toBe("hello in /home/cubicle");
  });

  it(
    "fails calls and a command's stream while the supervisor is stopped, and serves once it resumes",
    LONG,
    async () => {
      const watching = createSupervisorClient({
        baseUrl: supervisor?.url ?? "",
        token: TOKEN,
        liveness: { everyMs: 500, withinMs: 1_500 },
      });
      const pid = supervisor?.child.pid as number;
      const command = (async () => {
        for await (const _ of watching.exec(ref, { command: "echo started; sleep 30", timeoutMs: 60_000 })) {
          // the first event arrives before the stop
        }
      })();
      await new Promise((done) => setTimeout(done, 1_000));
      process.kill(pid, "SIGSTOP");
      try {
        await expect(command).rejects.toMatchObject({ code: "SUPERVISOR_UNREACHABLE" });
        await expect(watching.list()).rejects.toMatchObject({ code: "SUPERVISOR_UNREACHABLE" });
      } finally {
        process.kill(pid, "SIGCONT");
      }
      // the connections taken while it was stopped are not reused for what comes after
      expect((await run(watching, ref, "echo again")).stdout).toBe("again\n");
      expect((await watching.list()).map((computer) => computer.homeKey)).toContain(ref.homeKey);
    },
  );

  it("kills the whole process tree on timeout (124)", LONG, async () => {
    const started = Date.now();
    const all = await events(client, ref, "sleep 4321 & (sleep 4322 &) ; sleep 4323; echo never", 1_500);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(all.at(-1)).toEqual({
      type: "exit",
      code: 124,
      message: "command timed out after 1500 ms",
      truncated: false,
    });
    expect(all.some((event) => event.type !== "exit" && event.data.includes("never"))).toBe(false);
    const ps = await run(client, ref, "ps -eo args");
    expect(ps.stdout).not.toMatch(/sleep 432/);
  });

  it("kills the command when the client goes away (130 on the supervisor's side)", LONG, async () => {
    const controller = new AbortController();
    const received: CommandEvent[] = [];
    const consume = (async () => {
      for await (const event of client.exec(
        ref,
        { command: "echo started; sleep 4324", timeoutMs: 60_000 },
        { signal: controller.signal },
      )) {
        received.push(event);
        if (event.type === "stdout") controller.abort();
      }
    })();
    await expect(consume).rejects.toThrow();
    expect(received[0]).toEqual({ type: "stdout", data: "started\n" });
    let left = "";
    for (let attempt = 0; attempt < 20; attempt++) {
      left = (await run(client, ref, "ps -eo args")).stdout;
      if (!left.includes("sleep 4324")) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(left).not.toContain("sleep 4324");
  });

  it("caps output, marks it once and keeps the supervisor's memory bounded", LONG, async () => {
    const before = rssKb(supervisor?.child.pid);
    const all: CommandEvent[] = [];
    for await (const event of client.exec(ref, {
      command: "head -c 200000000 /dev/zero | tr '\\0' a; echo tail >&2",
      timeoutMs: 120_000,
      maxOutputBytes: 1_000,
    })) {
      all.push(event);
    }
    const text = all.map((event) => (event.type === "exit" ? "" : event.data)).join("");
    expect(text.split(OUTPUT_TRUNCATED_MARKER)).toHaveLength(2);
    expect(text.length).toBe(1_000 + OUTPUT_TRUNCATED_MARKER.length);
    expect(all.at(-1)).toEqual({ type: "exit", code: 0, truncated: true });
    const grown = rssKb(supervisor?.child.pid) - before;
    expect(grown).toBeLessThan(100 * 1024);
  });

  it("reads, writes, lists and deletes files confined to the home", LONG, async () => {
    const text = new TextEncoder().encode("hello from the supervisor test\n");
    await client.writeFile(ref, "notes/hello.txt", text);
    await client.writeFile(ref, "bin/run.sh", new TextEncoder().encode("#!/bin/sh\necho ran\n"), {
      executable: true,
    });
    const entries = await client.listFiles(ref, "");
    expect(
      entries.filter((entry) => !entry.name.startsWith(".")).map((entry) => [entry.name, entry.type]),
    ).toEqual([
      ["bin", "directory"],
      ["notes", "directory"],
    ]);
    expect(await client.listFiles(ref, "notes")).toEqual([
      expect.objectContaining({
        name: "hello.txt",
        path: "notes/hello.txt",
        type: "file",
        size: text.length,
      }),
    ]);
    expect((await client.listFiles(ref, "bin"))[0]).toMatchObject({ executable: true });
    expect((await run(client, ref, "bin/run.sh")).stdout).toBe("ran\n");
    expect((await run(client, ref, "stat -c '%u:%g %a' notes/hello.txt")).stdout).toBe("1000:1000 644\n");
    expect(Buffer.from(await client.readFile(ref, "notes/hello.txt", { maxBytes: 1_000 })).toString()).toBe(
      "hello from the supervisor test\n",
    );

    const tooLarge = await failure(client.readFile(ref, "notes/hello.txt", { maxBytes: 5 }));
    expect([tooLarge.status, tooLarge.code]).toEqual([413, "FILE_TOO_LARGE"]);
    expect((await failure(client.listFiles(ref, "notes/hello.txt"))).code).toBe("NOT_A_DIRECTORY");
    expect((await failure(client.readFile(ref, "notes", { maxBytes: 10 }))).code).toBe("NOT_A_FILE");
    expect((await failure(client.readFile(ref, "missing.txt", { maxBytes: 10 }))).code).toBe(
      "FILE_NOT_FOUND",
    );

    await run(client, ref, "ln -s /etc etc-link; ln -s /etc/passwd passwd-link; ln -s notes notes-link");
    for (const path of [
      "../x",
      "/etc/passwd",
      "etc-link",
      "etc-link/passwd",
      "passwd-link",
      "notes/../../x",
    ]) {
      const refused = await failure(client.readFile(ref, path, { maxBytes: 10_000 }));
      expect([path, refused.status, refused.code]).toEqual([path, 400, "PATH_OUTSIDE_HOME"]);
    }
    expect((await failure(client.writeFile(ref, "etc-link/evil", new Uint8Array(1)))).code).toBe(
      "PATH_OUTSIDE_HOME",
    );
    expect((await client.listFiles(ref, "notes-link"))[0]?.name).toBe("hello.txt");

    // a symlink is removed itself, never its target
    await client.deleteFile(ref, "etc-link");
    await client.deleteFile(ref, "passwd-link");
    expect((await run(client, ref, "test -f /etc/passwd && echo kept")).stdout).toBe("kept\n");
    await client.deleteFile(ref, "bin");
    expect((await failure(client.listFiles(ref, "bin"))).code).toBe("FILE_NOT_FOUND");
    expect((await failure(client.deleteFile(ref, ""))).code).toBe("INVALID_PATH");

    // streamed both ways
    const size = 20 * 1024 * 1024;
    await client.writeFile(ref, "big.bin", {
      stream: new Blob([new Uint8Array(size).fill(7)]).stream(),
      size,
    });
    const opened = await client.openFile(ref, "big.bin", { maxBytes: size });
    expect(opened.size).toBe(size);
    expect((await bytesOf(opened.body)).length).toBe(size);
    await client.deleteFile(ref, "big.bin");
  });

  it("starts Chromium with its profile in the home on the host", LONG, async () => {
    const profile = join(dataDir, "homes", ref.homeKey, ".browser-profiles", "chromium");
    const deadline = Date.now() + 60_000;
    while (!existsSync(join(profile, "Default")) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(existsSync(join(profile, "Default")), profile).toBe(true);
  });

  it("exports and imports the whole home as tar", LONG, async () => {
    const tar = await bytesOf(await client.exportHome(ref));
    const names = await tarNames(tar);
    expect(names).toContain("./");
    expect(names).toContain("./notes/hello.txt");
    expect(names.every((name) => name.startsWith("./"))).toBe(true);

    await client.writeFile(ref, "later.txt", new Uint8Array([1]));
    const garbage = await failure(client.importHome(ref, new Blob([new Uint8Array(4096).fill(1)]).stream()));
    expect(garbage.status).toBeGreaterThanOrEqual(400);
    // a refused archive changes nothing
    expect((await client.listFiles(ref, "")).some((entry) => entry.name === "later.txt")).toBe(true);

    await client.importHome(ref, new Blob([new Uint8Array(tar)]).stream());
    const after = (await client.listFiles(ref, "")).map((entry) => entry.name);
    expect(after).toContain("notes");
    expect(after).not.toContain("later.txt");
    expect(after.some((name) => name.startsWith(".cubicle-"))).toBe(false);
    expect((await run(client, ref, "cat notes/hello.txt; stat -c '%u' notes")).stdout).toBe(
      "hello from the supervisor test\n1000\n",
    );
    // the import closed the browsers (screen 0's, started at boot) before swapping, for good
    expect((await run(client, ref, "pgrep -a -x chromium || echo none")).stdout.trim()).toBe("none");
    expect((await run(client, ref, "ls /run/cubicle/screens/0")).stdout).not.toContain("browser.pid");
  });

  it(
    "lists the home with stamps and exports only named entries, as the whole export has them",
    LONG,
    async () => {
      // a staging folder an import left behind is in neither
      const staged = await run(client, ref, "mkdir -p .cubicle-old-x/deep && echo x > .cubicle-old-x/deep/f");
      expect(staged.code, staged.stderr).toBe(0);
      const listing = await client.listHome(ref);
      if (!listing) throw new Error("a running computer was not listed");
      const byPath = new Map(listing.entries.map((entry) => [entry.path, entry]));
      expect([byPath.get(".")?.type, byPath.get("notes")?.type, byPath.get("notes/hello.txt")?.type]).toEqual(
        ["directory", "directory", "file"],
      );
      expect(listing.entries.some((entry) => entry.path.startsWith(".cubicle-"))).toBe(false);
      // on the clock of the computer's change times: the host's, which it shares
      expect(Math.abs(listing.listedAt - Date.now() / 1000)).toBeLessThan(60);
      expect(byPath.get("notes/hello.txt")?.changedAt).toBeLessThanOrEqual(listing.listedAt);

      const named = await bytesOf(
        await client.exportHome(ref, {
          paths: ["", "notes", "notes/hello.txt", "gone.txt", ".cubicle-old-x"],
        }),
      );
      expect(await tarNames(named)).toEqual(["./", "./notes/", "./notes/hello.txt"]);
      // every listed entry by name is the whole export, entry for entry
      const whole = await tarEntries(await bytesOf(await client.exportHome(ref)));
      const everything = listing.entries.map((entry) => entry.path);
      expect(whole.size).toBeGreaterThan(10);
      expect(await tarEntries(await bytesOf(await client.exportHome(ref, { paths: everything })))).toEqual(
        whole,
      );

      // an entry tar cannot read fails the export, as it fails a whole one
      const locked = await run(client, ref, "echo secret > locked.txt && chmod 000 locked.txt");
      expect(locked.code, locked.stderr).toBe(0);
      await expect(bytesOf(await client.exportHome(ref, { paths: ["locked.txt"] }))).rejects.toThrow();
      await run(client, ref, "rm -rf locked.txt .cubicle-old-x");

      const outside = await failure(client.exportHome(ref, { paths: ["notes", "../other"] }));
      expect([outside.status, outside.code]).toEqual([400, "PATH_OUTSIDE_HOME"]);
      const nobody = { ...ref, homeKey: `${ref.homeKey}-nobody` };
      const unknown = [
        await failure(client.listHome(nobody)),
        await failure(client.exportHome(nobody, { paths: ["notes"] })),
      ];
      expect(unknown.map((error) => [error.status, error.code])).toEqual([
        [404, "COMPUTER_NOT_FOUND"],
        [404, "COMPUTER_NOT_FOUND"],
      ]);
    },
  );

  it("observes screen 0 as a 1280x800 picture", LONG, async () => {
    const shot = await client.observe(ref, 0);
    expect([shot.width, shot.height]).toEqual([1280, 800]);
    expect(Buffer.from(shot.png.subarray(1, 4)).toString()).toBe("PNG");
    expect(distinctPixels(shot.png)).toBeGreaterThan(8);
    expect(shot.cursor.x).toBeGreaterThanOrEqual(0);

    const screen = await client.openScreen(ref, 0);
    expect(screen).toMatchObject({ index: 0, display: ":1" });
    expect(await client.openScreen(ref, 0)).toEqual(screen);
    expect(await vncAccepts(screen.viewPort, screen.viewPassword)).toBe(true);
  });

  it("opens screen 1, types into its xterm and sees the change", LONG, async () => {
    const screen = await client.openScreen(ref, 1);
    expect(screen).toMatchObject({ index: 1, display: ":2" });
    screenOnePassword = screen.viewPassword;
    expect(await vncAccepts(screen.viewPort, screen.viewPassword)).toBe(true);
    expect(await vncAccepts(screen.viewPort, "wrong123")).toBe(false);

    const before = await client.observe(ref, 1);
    const result = await client.act(ref, 1, [
      { type: "move", x: 120, y: 120 },
      { type: "type", text: "echo cubicle-act-marker" },
      { type: "key", key: "Return" },
      { type: "wait", ms: 400 },
    ]);
    expect(result).toEqual({ completed: 4, total: 4 });
    const after = await client.observe(ref, 1);
    expect(Buffer.compare(Buffer.from(before.png), Buffer.from(after.png))).not.toBe(0);
    expect(after.cursor).toEqual({ x: 120, y: 120 });
    expect(after.activeWindow).toBe("xterm");
    const bash = await run(client, ref, "ps -eo args");
    expect(bash.stdout).toMatch(/Xvfb :2/);

    const status = await client.status(ref);
    expect(status.screens.map((s) => s.index)).toEqual([0, 1]);
  });

  it("refuses a ninth screen", async () => {
    const refused = await failure(client.openScreen(ref, 8));
    expect([refused.status, refused.code]).toEqual([400, "SCREEN_OUT_OF_RANGE"]);
    expect(refused.message).toMatch(/8 screens/);
  });

  it("opens and closes control of a screen", LONG, async () => {
    const control = await client.openControl(ref, 1, "ctl12345");
    expect(control.controlPort).toBeGreaterThan(0);
    expect(await vncAccepts(control.controlPort, "ctl12345")).toBe(true);
    expect((await client.status(ref)).screens[1]).toMatchObject({
      control: true,
      controlPort: control.controlPort,
    });
    await client.closeControl(ref, 1);
    expect((await client.status(ref)).screens[1]).toMatchObject({ control: false, controlPort: null });
    expect(await vncAnswers(control.controlPort)).toBe(false);
    await client.closeControl(ref, 1);
    expect((await failure(client.closeScreen(ref, 0))).code).toBe("SCREEN_PERMANENT");
  });

  it("keeps the control server for the same password and replaces it for another", LONG, async () => {
    const first = await client.openControl(ref, 1, "same1234");
    const held = await holdVncConnection(first.controlPort);
    expect(held.banner).toBe("RFB 003.008\n");
    const pidOf = async () =>
      (await run(client, ref, "cat /run/cubicle/screens/1/control.pid")).stdout.trim();
    const pid = await pidOf();
    expect(pid).toMatch(/^\d+$/);

    // the same password again: same port, same server, and the open connection is still served
    expect(await client.openControl(ref, 1, "same1234")).toEqual(first);
    expect(await pidOf()).toBe(pid);
    expect(held.isClosed(), "the control connection survived the second open").toBe(false);
    expect(await held.securityTypes()).toContain(2);
    expect(await vncAccepts(first.controlPort, "same1234")).toBe(true);

    // another password: a new server, the old connection drops, only the new password works
    const other = await holdVncConnection(first.controlPort);
    const replaced = await client.openControl(ref, 1, "next5678");
    expect(replaced.controlPort).toBe(first.controlPort);
    expect(await other.closesWithin(10_000), "the old control connection dropped").toBe(true);
    expect(held.isClosed() || (await held.closesWithin(10_000))).toBe(true);
    expect(await pidOf()).not.toBe(pid);
    expect(await vncAccepts(replaced.controlPort, "next5678")).toBe(true);
    expect(await vncAccepts(replaced.controlPort, "same1234")).toBe(false);

    // the view server was never touched
    const view = await client.openScreen(ref, 1);
    expect(await vncAccepts(view.viewPort, view.viewPassword)).toBe(true);
    await client.closeControl(ref, 1);
    expect(await vncAnswers(replaced.controlPort)).toBe(false);
    expect(await vncAccepts(view.viewPort, view.viewPassword)).toBe(true);
  });

  it("refuses another computer's identity", async () => {
    const wrong = { ...ref, computerId: "someone-else" };
    const refused = await failure(client.status(wrong));
    expect([refused.status, refused.code]).toEqual([404, "COMPUTER_NOT_FOUND"]);
    expect((await failure(client.destroy(wrong))).code).toBe("COMPUTER_NOT_FOUND");
  });

  it("settles the browsers: waits at least 30 s while Chromium runs", LONG, async () => {
    // Screen 0's Chromium went with the import above; one as a bot starts it, detached. On a new
    // profile: the imported one was exported while a browser ran, so it records a crash, and
    // Chromium keeps it marked "Crashed" until its restore prompt is answered (the graceful stop
    // below reads that mark).
    const launched = await run(
      client,
      ref,
      'rm -rf "$HOME/.browser-profiles" && DISPLAY=:1 setsid -f /opt/cubicle/browser about:blank </dev/null >/dev/null 2>&1',
    );
    expect(launched.code, launched.stderr).toBe(0);
    const deadline = Date.now() + 30_000;
    let pids = "";
    while (!/\d/.test(pids) && Date.now() < deadline) {
      pids = (await run(client, ref, "pgrep -x chromium || true")).stdout;
      if (!/\d/.test(pids)) await sleep(250);
    }
    expect(pids).toMatch(/\d/);
    const started = Date.now();
    await client.settleBrowsers(ref);
    const took = Date.now() - started;
    // Chromium writes cookies 30 s after the first unwritten change and cannot be asked to flush
    expect(took).toBeGreaterThanOrEqual(30_000);
    expect(took).toBeLessThan(60_000);
  });

  it("closes the browsers for good, and then settles at once", LONG, async () => {
    await client.closeBrowsers(ref);
    const left = async () => (await run(client, ref, "pgrep -a -x chromium || echo none")).stdout.trim();
    expect(await left()).toBe("none");
    expect((await run(client, ref, "ls /run/cubicle/screens/0")).stdout).not.toContain("browser.pid");
    // the entry point's loop (every 2 s) restarts a screen's browser that died; this one was closed
    await sleep(5_000);
    expect(await left()).toBe("none");

    const started = Date.now();
    await client.closeBrowsers(ref);
    await client.settleBrowsers(ref);
    // nothing runs, so nothing to wait for (the wait would be 31 s)
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it("stops gracefully: Chromium writes its profile and exits cleanly", LONG, async () => {
    // a browser as a bot starts one, detached from its command
    const launched = await run(
      client,
      ref,
      "DISPLAY=:1 setsid -f /opt/cubicle/browser about:blank </dev/null >/dev/null 2>&1",
    );
    expect(launched.code, launched.stderr).toBe(0);
    // wait until the running Chromium has recorded itself as running ("Crashed" until a clean exit),
    // so a kill would leave that on disk
    const preferences = join(dataDir, "homes", ref.homeKey, ".browser-profiles/chromium/Default/Preferences");
    const deadline = Date.now() + 90_000;
    let before: string | null = null;
    while (Date.now() < deadline) {
      before = exitType(existsSync(preferences) ? readFileSync(preferences) : null);
      if (before === "Crashed") break;
      await sleep(500);
    }
    expect(before, "Chromium's running marker in Default/Preferences").toBe("Crashed");

    await client.stop(ref);
    expect((await client.status(ref)).status).toBe("stopped");
    // read as a checkpoint would: the stopped computer's home through the archive API
    const tar = await bytesOf(await client.exportHome(ref));
    const after = exitType(await tarFile(tar, "./.browser-profiles/chromium/Default/Preferences"));
    // SIGTERM makes Chromium end its session ("SessionEnded"); a SIGKILL would have left "Crashed"
    expect(after).toMatch(/^(SessionEnded|Normal)$/);

    await client.create(ref);
  });

  it("stops and resumes with the home intact", LONG, async () => {
    await client.stop(ref);
    await client.stop(ref);
    expect((await client.status(ref)).status).toBe("stopped");
    const stopped = await failure(run(client, ref, "true"));
    expect([stopped.status, stopped.code]).toEqual([409, "COMPUTER_STOPPED"]);
    // a stopped computer is exported whole (no listing); named entries still come, from Docker's archive
    expect(await client.listHome(ref)).toBeNull();
    const named = await bytesOf(
      await client.exportHome(ref, { paths: ["notes", "notes/hello.txt", "gone.txt"] }),
    );
    expect(await tarNames(named)).toEqual(["./notes/", "./notes/hello.txt"]);

    const resumed = await client.create(ref);
    expect(resumed).toMatchObject({ providerRef, fresh: false, homeCreated: false });
    expect(
      Buffer.from(await client.readFile(ref, "notes/hello.txt", { maxBytes: 1_000 })).toString(),
    ).toContain("hello from the supervisor test");
    const screen = await client.openScreen(ref, 1);
    screenOnePassword = screen.viewPassword;
  });

  it("serves the same computers after a supervisor restart", LONG, async () => {
    await client.writeFile(ref, "restart/marker.txt", new TextEncoder().encode("kept\n"));
    // Killed outright, as a crash would: nothing may depend on a clean shutdown.
    await stopProcess(supervisor, "SIGKILL");
    supervisor = await startProcess(dataDir);
    client = createSupervisorClient({ baseUrl: supervisor.url, token: TOKEN });
    expect(await client.status(ref)).toMatchObject({ status: "running", providerRef });
    expect((await run(client, ref, "echo still-here")).stdout).toBe("still-here\n");
    expect(Buffer.from(await client.readFile(ref, "restart/marker.txt", { maxBytes: 100 })).toString()).toBe(
      "kept\n",
    );
    // the view password was kept in the computer, not in the old process
    expect((await client.openScreen(ref, 1)).viewPassword).toBe(screenOnePassword);
  });

  it("reconciles away computers the api no longer knows", LONG, async () => {
    await client.create(other);
    const keep = (await client.list())
      .map((computer) => computer.homeKey)
      .filter((key) => key !== other.homeKey);
    const removed = await client.reconcile(keep);
    expect(removed).toEqual([`cubicle-${other.homeKey}`]);
    expect((await client.status(other)).status).toBe("missing");
    expect((await client.list()).some((computer) => computer.homeKey === ref.homeKey)).toBe(true);
  });

  it("destroys the computer and keeps its home", LONG, async () => {
    expect(await client.destroy(ref)).toBe(true);
    expect(await client.destroy(ref)).toBe(false);
    expect((await client.status(ref)).status).toBe("missing");
    expect(existsSync(join(dataDir, "homes", ref.homeKey, "notes", "hello.txt"))).toBe(true);
  });
});
