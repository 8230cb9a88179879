/**
 * The Daytona emulator against the unmodified @daytonaio/sdk, with real desktop containers. The
 * cases share one desktop sandbox and run in order (its stop and start, and the emulator's
 * restart, come last); two more sandboxes, never started as desktops, are deleted and forgotten.
 */
import { execFileSync } from "node:child_process";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import {
  Daytona,
  DaytonaAuthenticationError,
  DaytonaFileNotFoundError,
  DaytonaNotFoundError,
  DaytonaProcessExecutionTimeoutError,
  type Sandbox,
} from "@daytonaio/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DaytonaEmulator, startDaytonaEmulator } from "../../src/daytona/index.ts";
import { machineChainOf } from "../../src/machines/firewall.ts";
import { localEngine } from "../../src/machines/index.ts";
import { firstMessage } from "../../src/testing/websocket.ts";

const instance = `test-${randomUUID().slice(0, 8)}`;
const apiKey = `dtn_${randomUUID()}`;
let emulator: DaytonaEmulator;
const clients: Daytona[] = [];
let daytona: Daytona;
let sandbox: Sandbox;
const blob = randomBytes(3 * 1024 * 1024 + 17);

function client(options: { apiKey?: string } = {}): Daytona {
  const made = new Daytona({
    apiKey: options.apiKey ?? apiKey,
    apiUrl: emulator.apiUrl,
    target: emulator.target,
  });
  clients.push(made);
  return made;
}

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

async function download(path: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await sandbox.fs.downloadFileStream(path)) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

/** The first WebSocket message from the sandbox's noVNC (websockify) through the preview link. */
const previewGreeting = (url: string, token: string) =>
  firstMessage(`${url.replace(/^http/, "ws")}/websockify`, { "x-daytona-preview-token": token });

/** The sandbox container's address now. */
async function addressOf(sandboxId: string): Promise<string> {
  const known = (await emulator.sandboxes()).find((one) => one.id === sandboxId);
  const info = await localEngine()
    .getContainer(known?.containerId ?? "")
    .inspect();
  return info.NetworkSettings.Networks.bridge?.IPAddress ?? "";
}

/** Whether the host's firewall sends the address's traffic to a machine chain (and has it). */
function firewalled(address: string): boolean {
  const rules = execFileSync("iptables", ["-w", "10", "-S"], { encoding: "utf8" });
  const chain = machineChainOf(address);
  return rules.includes(`-A DOCKER-USER -s ${address}/32 -j ${chain}`) && rules.includes(`-N ${chain}`);
}

/** Width and height from a PNG's IHDR. */
function pngSize(png: Buffer): { width: number; height: number } {
  expect(png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))).toBe(true);
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

beforeAll(async () => {
  emulator = await startDaytonaEmulator({ instance, apiKey });
  daytona = client();
  sandbox = await daytona.create(
    {
      labels: { suite: "daytona-emulator" },
      envVars: { VNC_RESOLUTION: "1280x800" },
      autoStopInterval: 0,
      autoDeleteInterval: -1,
      public: false,
    },
    { timeout: 120 },
  );
}, 180_000);

afterAll(async () => {
  for (const made of clients) await made[Symbol.asyncDispose]();
  await emulator?.close({ removeSandboxes: true });
});

describe("Daytona emulator", () => {
  it("refuses a wrong API key as Daytona does", async () => {
    await expect(client({ apiKey: "dtn_wrong" }).get(sandbox.id)).rejects.toBeInstanceOf(
      DaytonaAuthenticationError,
    );
  });

  it("creates a started sandbox with its labels, and answers get at once", async () => {
    expect(sandbox.state).toBe("started");
    expect(sandbox.user).toBe("daytona");
    const started = Date.now();
    const again = await daytona.get(sandbox.id);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(again.labels).toMatchObject({ suite: "daytona-emulator" });
    expect(again.env).toMatchObject({ VNC_RESOLUTION: "1280x800" });
    expect(await emulator.sandboxes()).toContainEqual(
      expect.objectContaining({ id: sandbox.id, state: "started", labels: again.labels }),
    );
  });

  it("runs a sync session command with stdout and stderr apart, in one lasting shell", async () => {
    await sandbox.process.createSession("main");
    const result = await sandbox.process.executeSessionCommand("main", {
      command: "sh -c 'echo out; echo err >&2; exit 3'",
    });
    expect(result).toMatchObject({ stdout: "out\n", stderr: "err\n", exitCode: 3 });
    await sandbox.process.executeSessionCommand("main", { command: "cd /tmp && export KEPT=yes" });
    const state = await sandbox.process.executeSessionCommand("main", {
      command: 'echo "$(pwd) $KEPT $(whoami)"',
    });
    expect(state.stdout).toBe("/tmp yes daytona\n");
  });

  it("streams an async session command's output live, stdout and stderr apart", async () => {
    const { cmdId } = await sandbox.process.executeSessionCommand("main", {
      command: "echo first; sleep 2; echo second >&2; echo third",
      runAsync: true,
    });
    const arrivals: Array<{ stream: string; text: string; at: number }> = [];
    await sandbox.process.getSessionCommandLogs(
      "main",
      cmdId,
      (text) => arrivals.push({ stream: "stdout", text, at: Date.now() }),
      (text) => arrivals.push({ stream: "stderr", text, at: Date.now() }),
    );
    const first = arrivals.find((arrival) => arrival.text.includes("first"));
    const second = arrivals.find((arrival) => arrival.text.includes("second"));
    expect(first?.stream).toBe("stdout");
    expect(second?.stream).toBe("stderr");
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThan(1_500);
    const joined = (stream: string) =>
      arrivals
        .filter((arrival) => arrival.stream === stream)
        .map((arrival) => arrival.text)
        .join("");
    expect(joined("stdout")).toBe("first\nthird\n");
    expect(joined("stderr")).toBe("second\n");
    expect((await sandbox.process.getSessionCommand("main", cmdId)).exitCode).toBe(0);
  });

  it("kills what a session started when it is deleted", async () => {
    await sandbox.process.createSession("doomed");
    await sandbox.process.executeSessionCommand("doomed", { command: "sleep 300", runAsync: true });
    const count = async () =>
      (await sandbox.process.executeCommand("pgrep -c -x -u daytona sleep")).result.trim();
    expect(await count()).toBe("1");
    await sandbox.process.deleteSession("doomed");
    expect(await count()).toBe("0");
  });

  it("executes a command with its output merged, and times it out as the daemon does", async () => {
    const result = await sandbox.process.executeCommand("echo out; echo err >&2; exit 4", "/tmp", {
      GREETING: "hi",
    });
    expect(result).toMatchObject({ exitCode: 4, result: "out\nerr\n" });
    expect(
      (await sandbox.process.executeCommand('echo "$GREETING $PWD"', "/tmp", { GREETING: "hi" })).result,
    ).toBe("hi /tmp\n");
    const started = Date.now();
    await expect(sandbox.process.executeCommand("sleep 30", undefined, undefined, 1)).rejects.toBeInstanceOf(
      DaytonaProcessExecutionTimeoutError,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("uploads and downloads files by stream, byte for byte, and lists them", async () => {
    const pieces = Array.from({ length: 13 }, (_, index) =>
      blob.subarray(index * 256 * 1024, (index + 1) * 256 * 1024),
    );
    await sandbox.fs.uploadFileStream(Readable.from(pieces), "data/blob.bin");
    await sandbox.fs.uploadFiles([
      { source: Buffer.from("hello\n"), destination: "/home/daytona/data/deep/hello.txt" },
    ]);
    expect(sha256(await download("data/blob.bin"))).toBe(sha256(blob));
    expect((await sandbox.fs.downloadFile("/home/daytona/data/deep/hello.txt")).toString()).toBe("hello\n");
    await expect(sandbox.fs.downloadFile("data/missing.bin")).rejects.toBeInstanceOf(
      DaytonaFileNotFoundError,
    );
    const listed = await sandbox.fs.listFiles("/home/daytona/data");
    expect(listed).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: "blob.bin", isDir: false, size: blob.length, owner: "daytona" }),
        expect.objectContaining({ name: "deep", isDir: true }),
      ]),
    );
  });

  it("starts computer use at VNC_RESOLUTION, takes screenshots and moves the mouse", async () => {
    await sandbox.computerUse.start();
    expect((await sandbox.computerUse.getStatus()).status).toBe("active");
    await sandbox.computerUse.mouse.move(321, 123);
    expect(await sandbox.computerUse.mouse.getPosition()).toEqual({ x: 321, y: 123 });
    const shot = await sandbox.computerUse.screenshot.takeFullScreen(true);
    expect(pngSize(Buffer.from(shot.screenshot ?? "", "base64"))).toEqual({ width: 1280, height: 800 });
    expect(shot.cursorPosition).toEqual({ x: 321, y: 123 });
    expect((await sandbox.computerUse.display.getInfo()).displays?.[0]).toMatchObject({
      width: 1280,
      height: 800,
    });
  });

  it("relays a preview link's WebSocket to noVNC with the token, and refuses it without", async () => {
    const link = await sandbox.getPreviewLink(6080);
    expect(link.url).toBe(`${emulator.apiUrl.replace(/\/api$/, "")}/preview/${sandbox.id}/6080`);
    expect(await previewGreeting(link.url, link.token)).toMatch(/^RFB 003\.00/);
    await expect(previewGreeting(link.url, "wrong")).rejects.toThrow("HTTP 401");
  });

  it("stops (toolbox refused, old token dead) and starts again (files kept, a new token)", async () => {
    const before = await sandbox.getPreviewLink(6080);
    await sandbox.stop();
    expect(sandbox.state).toBe("stopped");
    await expect(sandbox.process.executeCommand("true")).rejects.toThrow("Is the Sandbox started?");
    await expect(previewGreeting(before.url, before.token)).rejects.toThrow(/HTTP 40/);
    await sandbox.start();
    expect(sandbox.state).toBe("started");
    expect(sha256(await download("data/blob.bin"))).toBe(sha256(blob));
    expect((await sandbox.process.executeCommand("pgrep -c Xvfb")).result.trim()).toBe("0");
    const after = await sandbox.getPreviewLink(6080);
    expect(after.token).not.toBe(before.token);
    await sandbox.computerUse.start();
    await expect(previewGreeting(after.url, before.token)).rejects.toThrow("HTTP 401");
    expect(await previewGreeting(after.url, after.token)).toMatch(/^RFB 003\.00/);
  });

  it("forgets computer use at a start, even where a new process took one of its old pids", async () => {
    await sandbox.stop();
    await sandbox.start();
    // pids start low again after a start, so one computer use had before the stop may now be an
    // unrelated process's: one is made to have them all, as its pid files and X's lock name them
    const spawned = await sandbox.process.executeCommand(
      "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!",
    );
    const other = spawned.result.trim();
    expect(other).toMatch(/^\d+$/);
    try {
      const planted = await sandbox.process.executeCommand(
        `cd .daytona/computeruse && ls *.pid && for f in *.pid; do echo ${other} > "$f"; done && rm -f /tmp/.X1-lock && printf '%10d\\n' ${other} > /tmp/.X1-lock`,
      );
      expect(planted.result).toContain("xvfb.pid");
      expect((await sandbox.computerUse.getStatus()).status).toBe("inactive");
      await sandbox.computerUse.start();
      expect((await sandbox.computerUse.getStatus()).status).toBe("active");
      expect((await sandbox.process.executeCommand("pgrep -c -x Xvfb")).result.trim()).toBe("1");
      await sandbox.computerUse.stop();
      expect((await sandbox.process.executeCommand("pgrep -c -x Xvfb")).result.trim()).toBe("0");
      // its stop ends only what it started
      expect((await sandbox.process.executeCommand(`kill -0 ${other} && echo alive`)).result).toBe("alive\n");
    } finally {
      await sandbox.process.executeCommand(`kill ${other}`);
    }
  });

  it("takes network settings live, echoes them whole, and refuses what Daytona refuses", async () => {
    await expect(sandbox.updateNetworkSettings({ networkAllowList: "203.0.113.10" })).rejects.toThrow(
      "Missing CIDR prefix length",
    );
    const eleven = Array.from({ length: 11 }, (_, i) => `203.0.113.${i}/32`).join(",");
    await expect(sandbox.updateNetworkSettings({ networkAllowList: eleven })).rejects.toThrow(
      "cannot contain more than 10 networks",
    );
    await expect(sandbox.updateNetworkSettings({ domainAllowList: "example.123" })).rejects.toThrow(
      "Invalid domain",
    );
    expect(firewalled(await addressOf(sandbox.id))).toBe(false);

    await sandbox.updateNetworkSettings({ networkAllowList: "203.0.113.0/24" });
    // the answer is the whole sandbox, which the SDK takes as its own
    expect(sandbox).toMatchObject({
      state: "started",
      networkBlockAll: false,
      networkAllowList: "203.0.113.0/24",
    });
    expect(sandbox.labels).toMatchObject({ suite: "daytona-emulator" });
    expect(firewalled(await addressOf(sandbox.id))).toBe(true);
    // block-all clears the CIDR list
    await sandbox.updateNetworkSettings({ networkBlockAll: true });
    const read = await daytona.get(sandbox.id);
    expect(read.networkBlockAll).toBe(true);
    expect(read.networkAllowList).toBeUndefined();
  });

  it("enforces them only while the sandbox runs, on its address of the moment", async () => {
    const before = await addressOf(sandbox.id);
    expect(firewalled(before)).toBe(true);
    await sandbox.stop();
    expect(firewalled(before)).toBe(false);
    await sandbox.start();
    expect(sandbox.networkBlockAll).toBe(true);
    expect(firewalled(await addressOf(sandbox.id))).toBe(true);
  });

  it("takes network settings at create, checked as Daytona checks them, and lifts them at delete", async () => {
    await expect(daytona.create({ networkAllowList: "2001:db8::/32" })).rejects.toThrow(
      "Must be a valid IPv4 address",
    );
    await expect(daytona.create({ outboundProxyUrl: "http://127.0.0.1:3128" })).rejects.toThrow(
      "the emulator has no outbound proxy",
    );
    const blocked = await daytona.create({ labels: { suite: "daytona-emulator" }, networkBlockAll: true });
    expect(blocked.networkBlockAll).toBe(true);
    const address = await addressOf(blocked.id);
    expect(firewalled(address)).toBe(true);
    await blocked.delete();
    expect(firewalled(address)).toBe(false);
  });

  it("deletes a sandbox, and a forgotten one is not found either", async () => {
    const deleted = await daytona.create({ labels: { suite: "daytona-emulator" } });
    await deleted.delete();
    await expect(daytona.get(deleted.id)).rejects.toBeInstanceOf(DaytonaNotFoundError);
    const forgotten = await daytona.create({ labels: { suite: "daytona-emulator" } });
    await emulator.forget(forgotten.id);
    await expect(daytona.get(forgotten.id)).rejects.toBeInstanceOf(DaytonaNotFoundError);
    expect((await emulator.sandboxes()).map((known) => known.id)).toEqual([sandbox.id]);
  });

  it("keeps its sandboxes across a restart with the same instance", async () => {
    await emulator.close();
    emulator = await startDaytonaEmulator({ instance, apiKey });
    const adopted = await client().get(sandbox.id);
    expect(adopted.state).toBe("started");
    expect(adopted.networkBlockAll).toBe(true);
    expect(firewalled(await addressOf(sandbox.id))).toBe(true);
    expect(adopted.labels).toMatchObject({ suite: "daytona-emulator" });
    expect((await adopted.process.executeCommand("cat data/deep/hello.txt")).result).toBe("hello\n");
  });
});
