/**
 * The production stack (docker-compose.yml) as an operator brings it up (README "Deploy"): the
 * images `npm test` built with `npm run images`, `npm run deploy:init`, then Compose v2. Everything
 * after that is over HTTP, as a user or an automation would: sign up, a workspace, a bot, a
 * session running a command in a real computer, a view capability read through the proxy's
 * WebSocket. Then what the deployment promises: non-root services with production dependencies
 * only, the socket in the supervisor alone, only web and proxy published, computers cut off from
 * every other service and the host, their egress policies enforced by the unprivileged supervisor
 * through the firewall container, data kept across `down` and `up`, a missing secret named.
 */
import { randomBytes } from "node:crypto";
import { cpSync, readFileSync, rmSync } from "node:fs";
import { connect, createServer, type Server } from "node:net";
import { join } from "node:path";
import { expectStatus, TestClient } from "@cubicle/api/testing/harness";
import { openScreenSocket } from "@cubicle/api/testing/screen-socket";
import { createBot, type OpenedSession, SessionClient } from "@cubicle/api/testing/sessions";
import { until } from "@cubicle/api/testing/until";
import { startEgressHosts } from "@cubicle/host/testing/egress-hosts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ComposeStack, docker, inspect, repoRoot, run, UP_TIMEOUT_MS } from "../testing/compose.ts";

const SERVICES = ["postgres", "api", "supervisor", "proxy", "web"] as const;
const PASSWORD = "correct horse battery staple";

describe("the Compose stack", () => {
  const stack = new ComposeStack({
    project: "cubicle-smoke",
    edgeNet: "172.31.241",
    screensNet: "172.31.240",
    backendNet: "172.31.236",
    controlNet: "172.31.237",
    // two api replicas behind the same dashboard, proxy and database, from the first start
    env: { CUBICLE_API_REPLICAS: "2", SANDBOX_IDLE_MS: "10000" },
  });
  const tag = randomBytes(3).toString("hex");
  let hostListener: Server;
  let hostPort: number;

  // what the journey made, checked again after `down` and `up`
  const made = {
    email: `owner-${tag}@example.com`,
    workspaceId: "",
    botId: "",
    computerId: "",
    owner: undefined as TestClient | undefined,
    session: undefined as OpenedSession | undefined,
  };
  // the session stays open across the checks of the running computer, heartbeating as a working
  // automation does so that its lease does not lapse meanwhile
  let heartbeat: ReturnType<typeof setInterval> | undefined;

  beforeAll(async () => {
    const init = await stack.init("docker");
    expect(init.code, init.output).toBe(0);
    // a service on every address of the host, which computers must still not reach
    hostListener = createServer((socket) => socket.end("host\n"));
    await new Promise<void>((done) => hostListener.listen(0, "0.0.0.0", done));
    hostPort = (hostListener.address() as { port: number }).port;
  }, UP_TIMEOUT_MS);

  afterAll(async () => {
    clearInterval(heartbeat);
    await stack.remove([made.workspaceId]);
    await new Promise((done) => hostListener?.close(done));
    rmSync(stack.dir, { recursive: true, force: true });
  }, UP_TIMEOUT_MS);

  it(
    "refuses to come up without a secret file, naming it",
    async () => {
      const partial = join(stack.dir, "partial-secrets");
      cpSync(stack.secrets, partial, { recursive: true });
      rmSync(join(partial, "encryption_key"));
      const result = await stack.compose(["up", "-d"], { CUBICLE_SECRETS_DIR: partial });
      expect(result.code).not.toBe(0);
      expect(result.output).toContain("encryption_key");
      await stack.compose(["down", "--remove-orphans"]);
    },
    UP_TIMEOUT_MS,
  );

  it(
    "comes up healthy, and runs a session in a real computer with its screen through the proxy, over HTTP",
    async () => {
      await stack.up();
      const owner = new TestClient(stack.webUrl, [], stack.webUrl);
      // as the dashboard's sign-up page does: its origin on every call
      const signUp = { email: made.email, password: PASSWORD, name: "Owner" };
      expectStatus(await owner.fromDashboard("/api/auth/sign-up/email", signUp), 200);
      made.owner = owner;
      made.workspaceId = expectStatus(
        await owner.post("/v1/workspaces", { name: `Smoke ${tag}` }),
        201,
      ).json.id;
      const bot = await createBot(owner, made.workspaceId, "team");
      made.botId = bot.id;
      made.computerId = bot.computerId;

      const sessions = new SessionClient({ client: owner }, made.workspaceId);
      const session = await sessions.opened(bot.id);
      made.session = session;
      heartbeat = setInterval(() => void sessions.heartbeat(session), 10_000);
      const shell = await sessions.shell(session, {
        command: "echo hello from $(id -un) && printf kept > kept.txt",
      });
      expect(shell.exit?.code).toBe(0);
      expect(shell.stdout).toBe("hello from cubicle\n");

      const screens = `/v1/workspaces/${made.workspaceId}/computers/${bot.computerId}/screens/0`;
      const capability = expectStatus(
        await owner.post(`${screens}/capabilities`, { mode: "view" }),
        201,
      ).json;
      expect(capability.url).toBe(`${stack.env.CUBICLE_PROXY_PUBLIC_URL}/screen`);
      const screen = await openScreenSocket(capability.url.replace(/\/screen$/, ""), capability.token, {
        origin: stack.webUrl,
      });
      try {
        expect(screen.rfb.width).toBeGreaterThan(0);
        screen.rfb.requestUpdate();
        expect((await screen.rfb.readUpdate()).length).toBeGreaterThan(0);
      } finally {
        screen.ws.close();
      }
    },
    UP_TIMEOUT_MS,
  );

  it("passes cubicle doctor inside the api container, with the api's own configuration", async () => {
    const result = await stack.compose(["exec", "-T", "api", "cubicle", "doctor"]);
    expect(result.output).toMatch(/✓ provider\s+new computers run on docker/);
    expect(result.output).toMatch(/✓ supervisor\s+the supervisor at http:\/\/supervisor:7091 answers/);
    // the supervisor reads the host's rules through the firewall container
    expect(result.output).toMatch(/✓ host firewall\s+computers cannot open connections to this host/);
    expect(result.output).toMatch(/✓ egress\s+computers' egress policies are enforced/);
    expect(result.output).toMatch(/✓ homes folder/);
    expect(result.output).toMatch(/✓ computers\s+1 computer\(s\) made to the spec/);
    expect(result.output).toMatch(/✓ homes\s+every computer's home is there \(1\)/);
    expect(result.code, result.output).toBe(0);
  });

  it("runs two api replicas that both serve, migrated once", async () => {
    const replicas = await stack.containersOf("api");
    expect(replicas).toHaveLength(2);
    const said: string[] = [];
    for (const replica of replicas) {
      const networks = (await inspect(replica)).NetworkSettings.Networks as Record<
        string,
        { IPAddress: string }
      >;
      const ip = networks[`${stack.project}_edge`]?.IPAddress;
      expect((await fetch(`http://${ip}:3100/health`)).status, `replica ${ip}`).toBe(200);
      const logs = (await run("docker", ["logs", replica])).output;
      if (logs.includes('"database migrated"')) said.push("migrated");
      else if (logs.includes('"database schema up to date"')) said.push("up to date");
      else said.push(`neither: ${logs.slice(0, 500)}`);
    }
    expect(said.sort()).toEqual(["migrated", "up to date"]);
  });

  it("runs every service as a user other than root, from images without dev dependencies", async () => {
    // what only development needs: what the lockfile marks dev, and the manifests' devDependencies
    // that nothing installs for production (@types/node, say, is a dependency of protobufjs)
    const lock = JSON.parse(readFileSync(join(repoRoot, "package-lock.json"), "utf8"));
    const entries = lock.packages as Record<
      string,
      { dev?: boolean; devOptional?: boolean; devDependencies?: Record<string, string> }
    >;
    const devDependencies = new Set<string>();
    for (const [path, entry] of Object.entries(entries)) {
      if (path.includes("node_modules")) continue;
      for (const name of Object.keys(entry.devDependencies ?? {})) devDependencies.add(name);
    }
    const devOnly = Object.entries(entries)
      .filter(([path]) => /^node_modules\/(@[^/]+\/)?[^/]+$/.test(path))
      .map(([path, entry]) => ({ name: path.slice("node_modules/".length), entry }))
      .filter(({ name, entry }) => entry.dev || (entry.devOptional && devDependencies.has(name)))
      .map(({ name }) => name);
    expect(devOnly).toContain("vitest");
    for (const service of SERVICES) {
      const [container] = await stack.containersOf(service);
      if (!container) throw new Error(`${service} does not run`);
      const info = await inspect(container);
      expect(["", "0", "root"], `${service}'s image user`).not.toContain(info.Config.User.split(":")[0]);
      expect(await docker("exec", container, "id", "-u"), `${service}'s uid`).not.toBe("0");
      if (service === "postgres") continue;
      const listDev = 'for name in "$@"; do [ -e "/app/node_modules/$name" ] && echo "$name"; done; true';
      const found = await docker("exec", container, "sh", "-c", listDev, "sh", ...devOnly);
      expect(found, `${service}'s dev dependencies`).toBe("");
      // and what it runs with: the api, proxy and supervisor load TypeScript with tsx, the web runs Next
      const runtime = service === "web" ? "next" : "tsx";
      expect(await docker("exec", container, "ls", "/app/node_modules"), `${service}'s runtime`).toContain(
        runtime,
      );
    }
  });

  it("mounts the Docker socket in the supervisor alone, and publishes only web and proxy", async () => {
    const project = await docker("ps", "-q", "--filter", `label=com.docker.compose.project=${stack.project}`);
    const withSocket: string[] = [];
    const published: string[] = [];
    for (const id of project.split("\n")) {
      const info = await inspect(id);
      const service = info.Config.Labels["com.docker.compose.service"];
      if (info.Mounts.some((m: { Source: string }) => m.Source === "/var/run/docker.sock"))
        withSocket.push(service);
      for (const bindings of Object.values(info.NetworkSettings.Ports ?? {}) as (
        | { HostIp: string }[]
        | null
      )[])
        for (const binding of bindings ?? []) published.push(`${service} on ${binding.HostIp}`);
    }
    expect(withSocket).toEqual(["supervisor"]);
    expect(published.sort()).toEqual(["proxy on 127.0.0.1", "web on 127.0.0.1"]);
  });

  it("leaves the computer no way to the database, the api, the supervisor or the host", async () => {
    const [computer] = (
      await docker("ps", "-q", "--filter", `label=cubicle.computerId=${made.computerId}`)
    ).split("\n");
    if (!computer) throw new Error("the bot's computer does not run");
    const addressesOf = async (service: string) => {
      const [container] = await stack.containersOf(service);
      const networks = (await inspect(container as string)).NetworkSettings.Networks;
      return Object.values(networks as Record<string, { IPAddress: string }>).map(
        (network) => network.IPAddress,
      );
    };
    const gateway = (await inspect(computer)).NetworkSettings.Networks["cubicle-computers"].Gateway as string;
    const targets = [
      ...(await addressesOf("postgres")).map((ip) => `postgres ${ip} 5432`),
      ...(await addressesOf("api")).map((ip) => `api ${ip} 3100`),
      ...(await addressesOf("supervisor")).map((ip) => `supervisor ${ip} 7091`),
      `host ${gateway} ${hostPort}`,
      `host ${stack.env.CUBICLE_SCREENS_GATEWAY} ${hostPort}`,
    ];
    const probe = async (ip: string, port: string) =>
      (
        await run("docker", [
          "exec",
          computer,
          "timeout",
          "3",
          "bash",
          "-c",
          `exec 3<>/dev/tcp/${ip}/${port}`,
        ])
      ).code;
    // the probe itself works: the computer reaches its own screen's server
    expect(await probe("127.0.0.1", "6080")).toBe(0);
    const outcomes = await Promise.all(
      targets.map(async (target) => {
        const [, ip, port] = target.split(" ");
        return (await probe(ip as string, port as string)) === 0 ? target : null;
      }),
    );
    expect(outcomes.filter(Boolean)).toEqual([]);
  });

  it(
    "enforces the computer's egress policy from a firewall container that holds only the firewall's capabilities",
    async () => {
      const [supervisor] = await stack.containersOf("supervisor");
      const health = JSON.parse(
        await docker(
          "exec",
          supervisor as string,
          "node",
          "-e",
          "fetch('http://127.0.0.1:7091/health').then((r) => r.text()).then((t) => process.stdout.write(t))",
        ),
      );
      expect(health).toMatchObject({ egress: "on", hostFirewall: "on" });
      expect(await docker("exec", supervisor as string, "id", "-u")).toBe("1000");

      const [firewall] = await stack.containersOf("firewall");
      const info = await inspect(firewall as string);
      expect(info.HostConfig).toMatchObject({
        CapDrop: ["ALL"],
        NetworkMode: "host",
        ReadonlyRootfs: true,
        SecurityOpt: ["no-new-privileges"],
      });
      // (Docker writes them with or without the CAP_ prefix, by version)
      const added = (info.HostConfig.CapAdd as string[]).map((cap) => cap.replace(/^CAP_/, ""));
      expect(added.sort()).toEqual(["NET_ADMIN", "SYSLOG"]);
      expect(info.Mounts, "no socket, no secrets, no volume").toEqual([]);
      // what its processes hold: NET_ADMIN (bit 12) and SYSLOG (bit 34), nothing else
      const status = await docker("exec", firewall as string, "grep", "^CapEff", "/proc/1/status");
      expect(BigInt(`0x${status.split(/\s+/)[1]}`)).toBe((1n << 12n) | (1n << 34n));

      // the private stand-in only: the journey may run beside other egress tests, whose fixed
      // public and metadata stand-ins it must not take
      const hosts = await startEgressHosts(() => ({}), { privateOnly: true });
      try {
        const [computer] = (
          await docker("ps", "-q", "--filter", `label=cubicle.computerId=${made.computerId}`)
        ).split("\n");
        const attempt = await run("docker", [
          "exec",
          computer as string,
          "timeout",
          "10",
          "bash",
          "-c",
          `exec 3<>/dev/tcp/${hosts.privateAddress}/${hosts.port} && head -c 200 <&3`,
        ]);
        // the stand-in answers this host; the computer, routed through the host, is refused
        const fromHost = await new Promise<string>((done) => {
          const socket = connect({ host: hosts.privateAddress, port: hosts.port, timeout: 5_000 });
          socket.once("data", (data) => {
            socket.destroy();
            done(data.toString().trim());
          });
          socket.once("error", () => done(""));
          socket.once("timeout", () => {
            socket.destroy();
            done("");
          });
        });
        expect(fromHost).toBe(`hello ${hosts.privateAddress}`);
        expect(attempt.code, attempt.output).not.toBe(0);
        expect(attempt.output).not.toContain("hello");
        const policy = `/v1/workspaces/${made.workspaceId}/computers/${made.computerId}/egress-policy`;
        const owner = made.owner as TestClient;
        // counted by the rules' counters, and audited with its destination from the kernel log the
        // supervisor follows through the firewall container
        const audit = `/v1/workspaces/${made.workspaceId}/audit-events?action=computer.egress_refused&targetId=${made.computerId}`;
        type Destination = { address: string; port: number | null; protocol: string };
        const isRefused = (d: Destination) =>
          d.address === hosts.privateAddress && d.port === hosts.port && d.protocol === "tcp";
        const deadline = Date.now() + 60_000;
        for (;;) {
          const egress = expectStatus(await owner.get(policy), 200).json;
          expect(egress).toMatchObject({ level: "default", enforced: true });
          const events = expectStatus(await owner.get(audit), 200).json.items as {
            data: { destination: Destination };
          }[];
          if (egress.refusedTotal >= 1 && events.some((event) => isRefused(event.data.destination))) break;
          expect(Date.now(), "the refusal is counted and audited within a minute").toBeLessThan(deadline);
          await new Promise((done) => setTimeout(done, 1_000));
        }
      } finally {
        await hosts.close();
      }
    },
    UP_TIMEOUT_MS,
  );

  it(
    "suspends the idle computer once, whichever replica sees it first",
    async () => {
      clearInterval(heartbeat);
      const owner = made.owner as TestClient;
      const sessions = new SessionClient({ client: owner }, made.workspaceId);
      expectStatus(await sessions.end(made.session as OpenedSession, "success"), 200);
      const computer = `/v1/workspaces/${made.workspaceId}/computers/${made.computerId}`;
      const deadline = Date.now() + 120_000;
      while (expectStatus(await owner.get(computer), 200).json.state !== "suspended") {
        expect(Date.now(), "the computer is suspended within two minutes").toBeLessThan(deadline);
        await new Promise((done) => setTimeout(done, 1_000));
      }
      // both replicas run the job every second: give the other one its chances
      await new Promise((done) => setTimeout(done, 3_000));
      const audit = `/v1/workspaces/${made.workspaceId}/audit-events?action=computer.stopped&targetId=${made.computerId}`;
      const events = expectStatus(await owner.get(audit), 200).json.items;
      expect(events.map((event: { data: { reason: string } }) => event.data.reason)).toEqual(["idle"]);
    },
    UP_TIMEOUT_MS,
  );

  it(
    "keeps the account, the workspace, the bot and the computer's files across down and up",
    async () => {
      const down = await stack.compose(["down"]);
      expect(down.code, down.output).toBe(0);
      expect(await stack.containersOf("api")).toEqual([]);
      await stack.up();
      const owner = new TestClient(stack.webUrl, [], stack.webUrl);
      const signIn = { email: made.email, password: PASSWORD };
      expectStatus(await owner.fromDashboard("/api/auth/sign-in/email", signIn), 200);
      const workspaces = expectStatus(await owner.get("/v1/workspaces"), 200).json;
      expect(JSON.stringify(workspaces)).toContain(made.workspaceId);
      const bots = expectStatus(await owner.get(`/v1/workspaces/${made.workspaceId}/bots`), 200).json;
      expect(JSON.stringify(bots)).toContain(made.botId);
      const sessions = new SessionClient({ client: owner }, made.workspaceId);
      const session = await sessions.opened(made.botId);
      expect(expectStatus(await sessions.read(session, "kept.txt"), 200).text).toBe("kept");
      expectStatus(await sessions.end(session, "success"), 200);
    },
    UP_TIMEOUT_MS,
  );
  it(
    "records a bot's session in production: the api's record socket on the proxy, a complete recording, a WebM from the image's ffmpeg",
    async () => {
      const owner = made.owner as TestClient;
      const base = `/v1/workspaces/${made.workspaceId}`;
      expectStatus(
        await owner.put(`${base}/recording-policy`, {
          mode: "control-and-sessions",
          retentionDays: null,
          retentionBytes: null,
        }),
        200,
      );
      const sessions = new SessionClient({ client: owner }, made.workspaceId);
      const session = await sessions.opened(made.botId);
      const recording = await until(
        "the session's recording to start",
        async () =>
          expectStatus(
            await owner.get(`${base}/recordings?sessionId=${session.sessionId}`),
            200,
          ).json.items.find((r: { status: string }) => r.status === "recording"),
        60_000,
      );
      expect((await sessions.shell(session, { command: "xterm >/dev/null 2>&1 & sleep 2" })).exit?.code).toBe(
        0,
      );
      expectStatus(await sessions.end(session, "success"), 200);
      const ended = await until(
        "the recording to end",
        async () => {
          const row = expectStatus(await owner.get(`${base}/recordings/${recording.id}`), 200).json;
          return row.status === "recording" ? undefined : row;
        },
        60_000,
      );
      expect(ended).toMatchObject({ status: "complete", width: 1280, height: 800 });
      expect(ended.bytes).toBeGreaterThan(1_000);
      const exports = `${base}/recordings/${recording.id}/exports`;
      const requested = expectStatus(await owner.post(exports, { format: "webm" }), 202).json;
      const exported = await until(
        "the video to be made",
        async () => {
          const row = expectStatus(await owner.get(`${exports}/${requested.id}`), 200).json;
          return row.status === "queued" || row.status === "running" ? undefined : row;
        },
        120_000,
      );
      expect(exported).toMatchObject({ status: "ready", error: null });
      const video = await owner.fetch("GET", `${exports}/${requested.id}/content`);
      expect(video.status).toBe(200);
      expect(Buffer.from(await video.arrayBuffer()).subarray(0, 4)).toEqual(
        Buffer.from([0x1a, 0x45, 0xdf, 0xa3]),
      );
    },
    UP_TIMEOUT_MS,
  );
});
