/**
 * `npm run doctor` against Cubicle as `npm start` runs it, with a Private bot's computer running
 * in real Docker: it passes, then names each problem an operator can cause — a supervisor token the
 * supervisor refuses, a container started by hand on the computers' network, the computer host
 * set to `this-host` while SANDBOX_PROVIDER says docker, the computer image gone. (The Compose
 * stack's own doctor run is in compose-stack.test.ts.)
 */
import { randomBytes } from "node:crypto";
import { expectStatus, TestClient } from "@cubicle/api/testing/harness";
import { createBot, SessionClient } from "@cubicle/api/testing/sessions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { docker, run } from "../testing/compose.ts";
import { type Stack, startStack } from "../testing/stack.ts";

describe("cubicle doctor on npm start", () => {
  const tag = randomBytes(4).toString("hex");
  // the supervisor's image under a name of this test's own, so taking it away touches nothing else
  const image = `cubicle-computer-doctor-${tag}:latest`;
  const stranger = `handmade-${tag}`;
  let stack: Stack;
  let owner: TestClient;
  let workspaceId = "";

  // npm start's own variables; NODE_ENV as npm start left it (unset: development), not vitest's `test`
  const doctor = (env: Record<string, string> = {}) =>
    run("npm", ["run", "doctor", "--silent"], { ...stack.env, NODE_ENV: "development", ...env });

  beforeAll(async () => {
    await docker("tag", "cubicle-computer:latest", image);
    stack = await startStack({ SUPERVISOR_IMAGE: image });
    owner = new TestClient(stack.webUrl, [], stack.webUrl);
    const signUp = { email: `doctor-${tag}@example.com`, password: "correct horse battery", name: "Doctor" };
    // as the dashboard's sign-up page does: its origin on the call
    expectStatus(await owner.fromDashboard("/api/auth/sign-up/email", signUp), 200);
    workspaceId = expectStatus(await owner.post("/v1/workspaces", { name: `Doctor ${tag}` }), 201).json.id;
    // a Private bot's computer, started by a session: a home and a container for the doctor to check
    const bot = await createBot(owner, workspaceId, "private");
    const sessions = new SessionClient({ client: owner }, workspaceId);
    const session = await sessions.opened(bot.id);
    expect((await sessions.shell(session, { command: "true" })).exit?.code).toBe(0);
    expectStatus(await sessions.end(session, "success"), 200);
  }, 240_000);

  afterAll(async () => {
    await run("docker", ["rm", "-f", stranger]);
    await stack?.close([workspaceId]);
    await run("docker", ["rmi", image]);
  }, 120_000);

  it("passes, with a computer running", async () => {
    const result = await doctor();
    expect(result.output).toMatch(/✓ provider\s+new computers run on docker/);
    expect(result.output).toMatch(/✓ credential\s+docker took Cubicle's credential/);
    expect(result.output).toMatch(/✓ computers\s+1 computer\(s\) made to the spec/);
    expect(result.output).toMatch(/✓ homes\s+every computer's home is there \(1\)/);
    expect(result.output).toMatch(/✓ host firewall/);
    expect(result.code, result.output).toBe(0);
  });

  it("names a supervisor token the supervisor refuses", async () => {
    const result = await doctor({ SANDBOX_SUPERVISOR_TOKEN: randomBytes(32).toString("base64url") });
    expect(result.output).toMatch(
      /✗ supervisor token\s+the supervisor at \S+ refused SANDBOX_SUPERVISOR_TOKEN/,
    );
    expect(result.code).toBe(1);
  });

  it("names a container started by hand on the computers' network", async () => {
    await docker("run", "-d", "--network", "cubicle-computers", "--name", stranger, image, "sleep", "120");
    try {
      const result = await doctor();
      expect(result.output).toContain(`✗ strangers`);
      expect(result.output).toContain(`${stranger} (${image}) was not made by the supervisor`);
      expect(result.code).toBe(1);
    } finally {
      await docker("rm", "-f", stranger);
    }
  });

  it("names the computer host set to this-host while SANDBOX_PROVIDER says docker", async () => {
    expectStatus(await owner.patch("/v1/deployment/settings", { computerHost: "this-host" }), 200);
    try {
      const result = await doctor();
      expect(result.output).toMatch(
        /✗ provider\s+SANDBOX_PROVIDER is docker, but new computers run on desktop: the computer host setting is this-host/,
      );
      expect(result.code).toBe(1);
    } finally {
      expectStatus(await owner.patch("/v1/deployment/settings", { computerHost: "isolated" }), 200);
    }
    expect((await doctor()).code).toBe(0);
  });

  it("names the computer image gone from the engine", async () => {
    await docker("rmi", image);
    const result = await doctor();
    expect(result.output).toMatch(new RegExp(`✗ computer image\\s+${image} is not on the Docker engine`));
    expect(result.code).toBe(1);
  });
});
