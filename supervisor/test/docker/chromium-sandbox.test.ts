/**
 * Chromium's own sandbox in a real Docker computer (computer-image/seccomp/README.md): the browser
 * a bot starts isolates its pages in renderers of their own user and PID namespaces, under a
 * seccomp filter of Chromium's on top of the container's, while the container itself gains nothing
 * (no capability, no mount namespace, no chroot).
 */
import { randomBytes } from "node:crypto";
import {
  CHROMIUM_SANDBOX_PROBE,
  type ChromiumSandboxReport,
  chromiumSandboxReport,
  expectChromiumSandboxed,
} from "@cubicle/host/testing/chromium-sandbox";
import {
  type ComputerRef,
  createSupervisorClient,
  type SupervisorClient,
} from "@cubicle/providers/supervisor-wire";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSupervisor, type TestSupervisor } from "../../src/testing/supervisor.ts";

const LONG = { timeout: 240_000 };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("Chromium's sandbox in a Docker computer", () => {
  const docker = new Docker();
  const suffix = randomBytes(4).toString("hex");
  const ref: ComputerRef = {
    homeKey: `sandbox-${suffix}`,
    computerId: `c-${suffix}`,
    workspaceId: "ws-sandbox",
  };
  let supervisor: TestSupervisor | undefined;
  let client: SupervisorClient;

  async function run(command: string): Promise<{ stdout: string; code: number }> {
    let stdout = "";
    let code = -1;
    for await (const event of client.exec(ref, { command, timeoutMs: 30_000 })) {
      if (event.type === "stdout") stdout += event.data;
      if (event.type === "exit") code = event.code;
    }
    return { stdout, code };
  }

  beforeAll(async () => {
    supervisor = await startTestSupervisor();
    client = createSupervisorClient({ baseUrl: supervisor.url, token: supervisor.token });
    await client.create(ref);
  }, 240_000);

  afterAll(async () => {
    await docker
      .getContainer(`cubicle-${ref.homeKey}`)
      .remove({ force: true })
      .catch(() => undefined);
    await supervisor?.close();
  }, 60_000);

  it("runs the renderers of a page a bot opens in namespaces of their own", LONG, async () => {
    const launched = await run(
      "DISPLAY=:1 setsid -f /opt/cubicle/browser 'data:text/html,<title>sandboxed</title>' </dev/null >/dev/null 2>&1",
    );
    expect(launched.code).toBe(0);

    let report: ChromiumSandboxReport | null = null;
    const deadline = Date.now() + 90_000;
    while (!report && Date.now() < deadline) {
      report = chromiumSandboxReport((await run(CHROMIUM_SANDBOX_PROBE)).stdout);
      if (!report) await sleep(500);
    }
    expectChromiumSandboxed(report);
    expect(report?.chromium.some((process) => process.commandLine.includes("--user-data-dir="))).toBe(true);
  });

  it("gives the computer itself nothing more: no capability, mount namespace or chroot", async () => {
    const probe = await run(
      `grep '^CapEff:' /proc/self/status
       unshare --user --map-root-user --mount true 2>/dev/null; echo "mount namespace: $?"
       unshare --user --map-root-user --net true 2>/dev/null; echo "unshared network: $?"
       chroot / true 2>/dev/null; echo "chroot: $?"
       unshare --user --map-root-user true; echo "user namespace: $?"`,
    );
    expect(probe.stdout.split("\n").map((line) => line.trim())).toEqual([
      "CapEff:\t0000000000000000",
      "mount namespace: 1",
      "unshared network: 1",
      "chroot: 125",
      "user namespace: 0",
      "",
    ]);
  });
});
