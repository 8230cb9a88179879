/**
 * The same docker-compose.yml with computers elsewhere: SANDBOX_PROVIDER=none, then e2b, daytona
 * and box. No supervisor runs and nothing mounts the Docker socket. The vendors are their loopback
 * emulators driven by the unmodified SDKs (our client for Box), listening on the edge network's
 * gateway so that the api in its container reaches them as it would the vendor. `/health` reports
 * the configured vendor whatever its key; `cubicle doctor` proves the key with a call, and names a
 * wrong one.
 */
import { randomBytes } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { QUICK_TIMINGS, startBoxEmulator } from "@cubicle/emulators/box";
import { startDaytonaEmulator } from "@cubicle/emulators/daytona";
import { startE2bEmulator } from "@cubicle/emulators/e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ComposeStack, docker, inspect, UP_TIMEOUT_MS } from "../testing/compose.ts";

const EDGE = "172.31.245";
const GATEWAY = `${EDGE}.1`;

describe("the Compose stack with computers at a vendor", () => {
  const stack = new ComposeStack({
    project: "cubicle-vendors",
    edgeNet: EDGE,
    screensNet: "172.31.244",
    backendNet: "172.31.232",
    controlNet: "172.31.233",
  });
  const instance = `compose-vendors-${randomBytes(3).toString("hex")}`;
  const closers: (() => Promise<void>)[] = [];

  const doctor = () => stack.compose(["exec", "-T", "api", "cubicle", "doctor"]);
  const health = async () => (await fetch(`${stack.webUrl}/health`)).json();

  beforeAll(async () => {
    const init = await stack.init("none");
    expect(init.code, init.output).toBe(0);
  }, UP_TIMEOUT_MS);

  afterAll(async () => {
    await stack.remove();
    for (const close of closers) await close();
    rmSync(stack.dir, { recursive: true, force: true });
  }, UP_TIMEOUT_MS);

  it(
    "runs with SANDBOX_PROVIDER=none: no supervisor, no socket, and the doctor passes",
    async () => {
      const env = readFileSync(stack.envFile, "utf8");
      expect(env).toContain("SANDBOX_PROVIDER=none");
      expect(env).not.toContain("COMPOSE_PROFILES");
      await stack.up();
      expect(await stack.containersOf("supervisor")).toEqual([]);
      const project = (
        await docker("ps", "-q", "--filter", `label=com.docker.compose.project=${stack.project}`)
      )
        .split("\n")
        .filter(Boolean);
      expect(project).toHaveLength(4);
      for (const id of project) {
        const mounts = (await inspect(id)).Mounts as { Source: string }[];
        expect(mounts.map((mount) => mount.Source)).not.toContain("/var/run/docker.sock");
      }
      expect(await health()).toMatchObject({ ok: true, configured: "none", sandbox: "none" });
      const result = await doctor();
      expect(result.output).toMatch(/✓ provider\s+new computers run on none/);
      expect(result.output).not.toContain("supervisor");
      expect(result.code, result.output).toBe(0);
    },
    UP_TIMEOUT_MS,
  );

  it(
    "runs with SANDBOX_PROVIDER=e2b: /health says e2b whatever the key (degraded with a wrong one), the doctor proves it and names a wrong one",
    async () => {
      const e2b = await startE2bEmulator({ instance, host: GATEWAY });
      closers.push(() => e2b.close({ removeSandboxes: true }));
      const vendor = { SANDBOX_PROVIDER: "e2b", E2B_API_URL: e2b.apiUrl };

      await stack.up({ ...vendor, E2B_API_KEY: e2b.apiKey });
      expect(await health()).toMatchObject({ ok: true, configured: "e2b", sandbox: "e2b" });
      const good = await doctor();
      expect(good.output).toMatch(/✓ credential\s+e2b took Cubicle's credential/);
      expect(good.code, good.output).toBe(0);

      await stack.up({ ...vendor, E2B_API_KEY: `e2b_${randomBytes(20).toString("hex")}` });
      // still e2b, and degraded: the vendor refuses the key
      const refused = await health();
      expect(refused).toMatchObject({ ok: false, status: "degraded", configured: "e2b", sandbox: "e2b" });
      expect(refused.providerProblem).toMatch(/^PROVIDER_AUTH_FAILED: /);
      const wrong = await doctor();
      expect(wrong.output).toMatch(
        /✗ credential\s+e2b refused the api's call \(PROVIDER_AUTH_FAILED\): E2B refused the API key while listing sandboxes: check E2B_API_KEY/,
      );
      expect(wrong.code).toBe(1);
    },
    UP_TIMEOUT_MS,
  );

  it(
    "runs with SANDBOX_PROVIDER=daytona and =box, the doctor proving each key with the vendor",
    async () => {
      const daytona = await startDaytonaEmulator({ instance, host: GATEWAY });
      closers.push(() => daytona.close({ removeSandboxes: true }));
      await stack.up({
        SANDBOX_PROVIDER: "daytona",
        DAYTONA_API_KEY: daytona.apiKey,
        DAYTONA_API_URL: daytona.apiUrl,
        DAYTONA_TARGET: daytona.target,
      });
      const onDaytona = await doctor();
      expect(onDaytona.output).toMatch(/✓ credential\s+daytona took Cubicle's credential/);
      expect(onDaytona.code, onDaytona.output).toBe(0);

      const box = await startBoxEmulator({ instance, host: GATEWAY, timings: QUICK_TIMINGS });
      closers.push(() => box.close({ removeBoxes: true }));
      await stack.up({ SANDBOX_PROVIDER: "box", BOX_API_KEY: box.apiKey, BOX_API_URL: box.apiUrl });
      const onBox = await doctor();
      expect(onBox.output).toMatch(/✓ credential\s+box took Cubicle's credential/);
      expect(onBox.code, onBox.output).toBe(0);
    },
    UP_TIMEOUT_MS,
  );
});
