/**
 * The E2B emulator against the unmodified @e2b/desktop SDK, with real desktop containers. The cases
 * share one desktop sandbox and run in order (its pause, adoption, timeout and kill come last), so
 * the file costs one desktop boot.
 */
import { execFileSync } from "node:child_process";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { get as httpGet } from "node:http";
import { startEgressHosts } from "@cubicle/host/testing/egress-hosts";
import {
  ALL_TRAFFIC,
  AuthenticationError,
  CommandExitError,
  FileNotFoundError,
  Sandbox,
  SandboxError,
  SandboxNotFoundError,
  TimeoutError,
} from "@e2b/desktop";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type E2bEmulator, startE2bEmulator } from "../../src/e2b/index.ts";
import { machineChainOf } from "../../src/machines/firewall.ts";
import { firstMessage } from "../../src/testing/websocket.ts";

const instance = `test-${randomUUID().slice(0, 8)}`;
let emulator: E2bEmulator;
let sandbox: Sandbox;

const connection = () => ({
  apiKey: emulator.apiKey,
  apiUrl: emulator.apiUrl,
  sandboxUrl: emulator.sandboxUrl,
  domain: emulator.domain,
});
const port = () => new URL(emulator.apiUrl).port;

async function eventually(check: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The first WebSocket message from the sandbox's port 6080 (websockify), reached with `headers`. */
const portGreeting = (headers: Record<string, string>) =>
  firstMessage(`ws://127.0.0.1:${port()}/websockify`, headers);

function httpStatus(path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    httpGet({ host: "127.0.0.1", port: port(), path, headers }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    }).once("error", reject);
  });
}

beforeAll(async () => {
  emulator = await startE2bEmulator({ instance });
  sandbox = await Sandbox.create({
    ...connection(),
    resolution: [1280, 800],
    timeoutMs: 600_000,
    metadata: { suite: "e2b-emulator" },
    lifecycle: { onTimeout: "pause" },
    network: { allowPublicTraffic: false },
  });
}, 180_000);

afterAll(async () => {
  await emulator?.close({ removeSandboxes: true });
});

describe("the E2B emulator, driven by the unmodified @e2b/desktop SDK", () => {
  it("boots a real desktop (the SDK's own Xvfb and xfce start) and screenshots it at 1280x800", async () => {
    const png = Buffer.from(await sandbox.screenshot());
    expect(png.subarray(1, 4).toString("latin1")).toBe("PNG");
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([1280, 800]);
    const session = await sandbox.commands.run("pgrep -x xfce4-session && whoami && pwd");
    expect(session.stdout).toMatch(/^\d+\nuser\n\/home\/user\n$/);
  });

  it("runs commands as E2B does: exit codes, stderr, streamed output, stdin", async () => {
    const failed = await sandbox.commands
      .run("echo hi; echo err >&2; exit 3")
      .catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(CommandExitError);
    expect(failed).toMatchObject({ exitCode: 3, stdout: "hi\n", stderr: "err\n" });

    const seen: number[] = [];
    const result = await sandbox.commands.run("echo first; sleep 1; echo second", {
      onStdout: () => void seen.push(Date.now()),
    });
    expect(result.stdout).toBe("first\nsecond\n");
    expect(seen[0]).toBeLessThan(Date.now() - 700);

    const cat = await sandbox.commands.run("cat", { background: true, stdin: true });
    await cat.sendStdin("typed\n");
    await cat.closeStdin();
    expect((await cat.wait()).stdout).toBe("typed\n");
  });

  it("gives background commands their real pid, lists them and kills them; a deadline kills too", async () => {
    const sleeper = await sandbox.commands.run("sleep 300", { background: true });
    expect((await sandbox.commands.list()).map((process) => process.pid)).toContain(sleeper.pid);
    expect((await sandbox.commands.run(`ps -o comm= -p ${sleeper.pid}`)).stdout.trim()).toBe("sleep");
    expect(await sleeper.kill()).toBe(true);
    await expect(sleeper.wait()).rejects.toMatchObject({ exitCode: -1 });
    expect(await sandbox.commands.kill(sleeper.pid)).toBe(false);

    await expect(sandbox.commands.run("sleep 31", { timeoutMs: 1_000 })).rejects.toBeInstanceOf(TimeoutError);
    await eventually(
      async () => (await sandbox.commands.run("ps -eo args= | grep -cx 'sleep 31' || true")).stdout === "0\n",
      "the timed-out command's death",
    );
  });

  it("writes and reads files: binary bytes, a 50 MB stream both ways, folders", async () => {
    const bytes = new Uint8Array([0xff, 0xfe, 0x00, 0x80, 0xc3, 0x28, 0x0a]);
    await sandbox.files.write("bin/data.bin", bytes.buffer);
    expect(await sandbox.files.read("/home/user/bin/data.bin", { format: "bytes" })).toEqual(bytes);
    expect(await sandbox.files.getInfo("bin")).toMatchObject({ type: "dir", owner: "user", group: "user" });
    await expect(sandbox.files.read("bin/missing")).rejects.toBeInstanceOf(FileNotFoundError);
    await sandbox.files.write("bin/zipped.txt", "compressed both ways", { gzip: true });
    expect(await sandbox.files.read("bin/zipped.txt", { gzip: true })).toBe("compressed both ways");

    const chunk = randomBytes(1024 * 1024);
    const chunks = 50;
    const expected = createHash("sha256");
    for (let i = 0; i < chunks; i++) expected.update(chunk);
    let sent = 0;
    const upload = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ === chunks) controller.close();
        else controller.enqueue(new Uint8Array(chunk));
      },
    });
    await sandbox.files.write("big/blob.bin", upload);
    expect((await sandbox.files.getInfo("big/blob.bin")).size).toBe(chunks * chunk.length);
    const actual = createHash("sha256");
    const reader = (await sandbox.files.read("big/blob.bin", { format: "stream" })).getReader();
    for (let read = await reader.read(); !read.done; read = await reader.read()) actual.update(read.value);
    expect(actual.digest("hex")).toBe(expected.digest("hex"));

    expect(await sandbox.files.makeDir("made/deeper")).toBe(true);
    expect(await sandbox.files.makeDir("made/deeper")).toBe(false);
    expect(await sandbox.files.list("made")).toMatchObject([
      { name: "deeper", type: "dir", path: "/home/user/made/deeper" },
    ]);
    await sandbox.files.remove("made");
    expect(await sandbox.files.exists("made")).toBe(false);
  });

  it("relays the stream's noVNC (HTTP and WebSocket) by host or headers, only with the traffic token", async () => {
    await sandbox.stream.start({ requireAuth: true });
    const token = sandbox.trafficAccessToken ?? "";
    expect(token).not.toBe("");
    const byHost = { Host: `6080-${sandbox.sandboxId}.${emulator.domain}` };
    const byHeaders = { "E2b-Sandbox-Id": sandbox.sandboxId, "E2b-Sandbox-Port": "6080" };
    expect(await portGreeting({ ...byHost, "e2b-traffic-access-token": token })).toMatch(/^RFB 003\.00\d\n$/);
    expect(await portGreeting({ ...byHeaders, "e2b-traffic-access-token": token })).toMatch(
      /^RFB 003\.00\d\n$/,
    );
    await expect(portGreeting(byHeaders)).rejects.toThrow("HTTP 403");
    expect(await httpStatus("/vnc.html", { ...byHost, "e2b-traffic-access-token": token })).toBe(200);
    expect(await httpStatus("/vnc.html", byHost)).toBe(403);
    const nothingListens = { ...byHeaders, "E2b-Sandbox-Port": "6999", "e2b-traffic-access-token": token };
    expect(await httpStatus("/", nothingListens)).toBe(502);
  });

  it("refuses a wrong API key and templates other than desktop", async () => {
    await expect(Sandbox.create({ ...connection(), apiKey: "wrong" })).rejects.toBeInstanceOf(
      AuthenticationError,
    );
    await expect(Sandbox.create("base", connection())).rejects.toBeInstanceOf(SandboxError);
  });

  it("takes E2B's network settings: refuses bad ones as E2B does, echoes them, enforces them and E2B's own refusals, changes them live", async () => {
    const hosts = await startEgressHosts(() => ({}), { privateOnly: true });
    try {
      const reach = async () =>
        (
          await sandbox.commands.run(
            `timeout 10 bash -c 'exec 3<>/dev/tcp/${hosts.privateAddress}/${hosts.port} && head -c 200 <&3' 2>/dev/null || true`,
          )
        ).stdout.trim();
      // E2B refuses private addresses whatever a sandbox's settings say; this host reaches the server
      expect(
        execFileSync("bash", [
          "-c",
          `exec 3<>/dev/tcp/${hosts.privateAddress}/${hosts.port} && head -c 200 <&3`,
        ]).toString(),
      ).toContain("hello");
      expect(await reach()).toBe("");
      const info = await Sandbox.getInfo(sandbox.sandboxId, connection());
      expect(info.allowInternetAccess ?? null).toBeNull();
      expect(info.network).toEqual({ allowPublicTraffic: false });

      const update = (network: Parameters<typeof Sandbox.updateNetwork>[1]) =>
        Sandbox.updateNetwork(sandbox.sandboxId, network, connection());
      await expect(update({ allowOut: ["example.com"] })).rejects.toThrow(
        "you must include 'ALL_TRAFFIC' in deny out",
      );
      await expect(update({ denyOut: ["example.com"] })).rejects.toThrow("invalid denied CIDR example.com");
      await expect(update({ denyOut: ["0.0.0.0/8"] })).rejects.toThrow("invalid denied CIDR 0.0.0.0/8");
      await expect(update({ allowOut: ["10.0.0.0/33"] })).rejects.toThrow(
        "invalid allowed address 10.0.0.0/33",
      );
      await expect(Sandbox.create({ ...connection(), network: { denyOut: ["nowhere"] } })).rejects.toThrow(
        "invalid denied CIDR nowhere",
      );
      // features E2B gives teams by a flag, which the emulator's team does not have
      await expect(update({ rules: { "example.com": [] } })).rejects.toThrow(
        "Network transform rules are not available for your team.",
      );
      await expect(update({ egressProxy: { address: "proxy.example.com:1080" } })).rejects.toThrow(/^403: /);
      await expect(Sandbox.updateNetwork("nosuchsandbox", {}, connection())).rejects.toBeInstanceOf(
        SandboxNotFoundError,
      );

      // an allowed private address stays refused: E2B's own refusals come first
      await update({ allowOut: ["203.0.113.7", `${hosts.privateAddress}/32`], denyOut: [ALL_TRAFFIC] });
      expect((await Sandbox.getInfo(sandbox.sandboxId, connection())).network).toEqual({
        allowPublicTraffic: false,
        allowOut: ["203.0.113.7", `${hosts.privateAddress}/32`],
        denyOut: [ALL_TRAFFIC],
      });
      expect(await reach()).toBe("");
      const [known] = await emulator.sandboxes();
      const chain = execFileSync("iptables", [
        "-w",
        "10",
        "-S",
        machineChainOf(known?.address ?? ""),
      ]).toString();
      expect(chain).toContain("-d 203.0.113.7/32 -j RETURN");
      expect(chain.indexOf("-d 10.0.0.0/8 -p tcp -j REJECT")).toBeLessThan(
        chain.indexOf("-d 203.0.113.7/32"),
      );

      // omitted settings are cleared, as on E2B
      await update({});
      expect((await Sandbox.getInfo(sandbox.sandboxId, connection())).network).toEqual({
        allowPublicTraffic: false,
      });
      expect(
        execFileSync("iptables", ["-w", "10", "-S", machineChainOf(known?.address ?? "")]).toString(),
      ).not.toContain("203.0.113.7");
    } finally {
      await hosts.close();
    }
  });

  it("pauses with memory: envd refuses, a second pause is a 409, connect resumes files and processes", async () => {
    const sleeper = await sandbox.commands.run("sleep 600", { background: true });
    await sandbox.files.write("before-pause.txt", "kept");
    expect(await sandbox.pause()).toBe(true);
    await expect(sandbox.commands.run("true")).rejects.toBeInstanceOf(SandboxNotFoundError);
    await expect(sandbox.files.read("before-pause.txt")).rejects.toBeInstanceOf(TimeoutError);
    await expect(sleeper.wait()).rejects.toBeInstanceOf(TimeoutError);
    expect(await sandbox.isRunning()).toBe(false);
    expect(await sandbox.pause()).toBe(false);
    expect((await Sandbox.getInfo(sandbox.sandboxId, connection())).state).toBe("paused");
    // E2B changes only a running sandbox's network
    await expect(Sandbox.updateNetwork(sandbox.sandboxId, {}, connection())).rejects.toThrow(/^409: /);

    const resumed = await Sandbox.connect(sandbox.sandboxId, connection());
    expect(await resumed.files.read("before-pause.txt")).toBe("kept");
    const again = await resumed.commands.connect(sleeper.pid);
    expect((await resumed.commands.run(`ps -o comm= -p ${again.pid}`)).stdout.trim()).toBe("sleep");
    expect(await again.kill()).toBe(true);
    await expect(again.wait()).rejects.toBeInstanceOf(CommandExitError);
  });

  it("lets a new emulator of the same instance adopt the sandboxes of a closed one", async () => {
    const { apiKey } = emulator;
    await emulator.close();
    emulator = await startE2bEmulator({ instance, apiKey });
    expect(await emulator.sandboxes()).toEqual([
      expect.objectContaining({
        sandboxId: sandbox.sandboxId,
        state: "running",
        metadata: { suite: "e2b-emulator" },
      }),
    ]);
    const adopted = await Sandbox.connect(sandbox.sandboxId, connection());
    expect((await adopted.commands.run("cat before-pause.txt && pgrep -x xfwm4 >/dev/null")).stdout).toBe(
      "kept",
    );
    const listed = await Sandbox.list({
      ...connection(),
      query: { metadata: { suite: "e2b-emulator" } },
    }).nextItems();
    expect(listed.map((info) => info.sandboxId)).toEqual([sandbox.sandboxId]);
    sandbox = adopted;
  });

  it("pauses by itself when its timeout passes (autoPause), and is gone once killed", async () => {
    await sandbox.setTimeout(2_000);
    await eventually(
      async () => (await emulator.sandboxes()).some((known) => known.state === "paused"),
      "the timeout's pause",
    );
    expect((await Sandbox.getInfo(sandbox.sandboxId, connection())).state).toBe("paused");
    const [known] = await emulator.sandboxes();
    // paused with memory, it keeps its address and the rules on it
    expect(execFileSync("iptables", ["-w", "10", "-S"]).toString()).toContain(
      `-s ${known?.address}/32 -j ${machineChainOf(known?.address ?? "")}`,
    );
    expect(await sandbox.kill()).toBe(true);
    // the rules on its address went with it
    expect(execFileSync("iptables", ["-w", "10", "-S"]).toString()).not.toContain(
      machineChainOf(known?.address ?? ""),
    );
    await expect(Sandbox.connect(sandbox.sandboxId, connection())).rejects.toBeInstanceOf(
      SandboxNotFoundError,
    );
    expect(await sandbox.kill()).toBe(false);
    expect(await emulator.sandboxes()).toEqual([]);
  });

  it("forgets a sandbox behind its users' back", async () => {
    const created = await fetch(`${emulator.apiUrl}/v2/sandboxes`, {
      method: "POST",
      headers: { "X-API-KEY": emulator.apiKey, "Content-Type": "application/json" },
      body: JSON.stringify({ templateID: "desktop", timeout: 60 }),
    });
    expect(created.status).toBe(201);
    const { sandboxID } = (await created.json()) as { sandboxID: string };
    await emulator.forget(sandboxID);
    await expect(Sandbox.connect(sandboxID, connection())).rejects.toBeInstanceOf(SandboxNotFoundError);
  });
});
