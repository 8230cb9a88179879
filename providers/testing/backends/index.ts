import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { QUICK_TIMINGS, startBoxEmulator } from "@cubicle/emulators/box";
import { startDaytonaEmulator } from "@cubicle/emulators/daytona";
import { type SandboxNetwork, startE2bEmulator } from "@cubicle/emulators/e2b";
import { createBoxProvider } from "../../src/box/index.ts";
import type { EgressPolicy } from "../../src/contract/index.ts";
import { createDaytonaProvider } from "../../src/daytona/index.ts";
import { createDesktopProvider } from "../../src/desktop/index.ts";
import { createDockerProvider } from "../../src/docker/index.ts";
import { createSupervisorClient } from "../../src/docker/supervisor/client.ts";
import { createE2bProvider } from "../../src/e2b/index.ts";
import { openDirectory, removeInside } from "../../src/kernel/confined-walk.ts";
import { fakeEgress } from "../fake/egress.ts";
import { createFakeProvider } from "../fake/index.ts";
import { ArmedFaults } from "../faults.ts";
import type { MakeProvider } from "../suites/types.ts";

/**
 * Every backend as the shared suites build it: the provider suites (the *.test.ts files here) and
 * the reliability suite both take their backends from these, so a backend is set up one way.
 */

/** In memory, built around a fresh fault plan, with nothing to tear down. */
export const fake: MakeProvider = async () => {
  const faults = new ArmedFaults();
  const provider = createFakeProvider({ faults });
  return {
    provider,
    faults,
    appliedEgress: async (ref) => fakeEgress(provider).policyOf(ref.providerRef ?? ""),
    cleanup: async () => {},
  };
};

/** The host's own processes and screens, with homes in a temporary folder removed afterwards. */
export const desktop: MakeProvider = async () => {
  const homesDir = await mkdtemp(join(tmpdir(), "cubicle-desktop-homes-"));
  const faults = new ArmedFaults();
  const provider = createDesktopProvider({ homesDir, faults });
  return {
    provider,
    faults,
    liveScreens: provider.capabilities.graphical,
    cleanup: async () => {
      await provider.shutdown();
      // folder by folder from open handles: a machine's programs may have nested folders deeper
      // than a path can name (PATH_MAX), which fs.rm fails on
      const parent = await openDirectory(dirname(homesDir));
      try {
        await removeInside(parent, basename(homesDir));
      } finally {
        await parent.close();
      }
    },
  };
};

/**
 * Containers on the real Docker engine, through a real supervisor on a free loopback port: the
 * supervisor's own program (`cubicle-supervisor`, the bin of the workspace's supervisor package)
 * in a process of its own, with a temporary DATA_DIR and a random token, stopped and its DATA_DIR
 * removed afterwards.
 */
export const docker: MakeProvider = async () => {
  const supervisor = await startSupervisorProgram();
  const faults = new ArmedFaults();
  const client = createSupervisorClient({ baseUrl: supervisor.url, token: supervisor.token });
  const provider = createDockerProvider({ supervisor: client, faults });
  return {
    provider,
    faults,
    liveScreens: true,
    appliedEgress: async ({ homeKey, computerId, workspaceId }) =>
      (await client.egress({ homeKey, computerId, workspaceId }, null)).policy,
    withWrongCredential: () =>
      createDockerProvider({
        supervisor: createSupervisorClient({ baseUrl: supervisor.url, token: "w".repeat(40) }),
      }),
    cleanup: () => supervisor.close(),
  };
};

/**
 * The supervisor is a package above this one (it serves the wire its client here calls), so the
 * providers never import it: the suites start it as a deployment does, as a program. Its launcher
 * is found where npm links the workspaces' programs, the repository's node_modules/.bin.
 */
const SUPERVISOR_PROGRAM = join(import.meta.dirname, "../../../node_modules/.bin/cubicle-supervisor");
/** The line it prints once it listens. */
const LISTENING = /^cubicle supervisor listening on (\S+)$/;
const SUPERVISOR_START_MS = 60_000;
const SUPERVISOR_STOP_MS = 30_000;

/**
 * A supervisor program on a free loopback port (port 0: the system picks one, and the program
 * prints its url), configured only by what is given here (none of this process's SUPERVISOR_*
 * settings reach it), like the in-process test supervisor it replaces.
 */
async function startSupervisorProgram(): Promise<{ url: string; token: string; close(): Promise<void> }> {
  const dataDir = await mkdtemp(join(tmpdir(), "cubicle-test-supervisor-"));
  const token = randomBytes(32).toString("hex");
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith("SUPERVISOR_") && !name.startsWith("SANDBOX_") && name !== "DATA_DIR")
      env[name] = value;
  }
  const child = spawn(process.execPath, [SUPERVISOR_PROGRAM], {
    env: { ...env, DATA_DIR: dataDir, SANDBOX_SUPERVISOR_TOKEN: token, SUPERVISOR_PORT: "0" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  // "error" alone when it could not be started at all
  const exited = new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.once("error", () => resolve());
  });
  // a test process that ends without its cleanup must not leave the supervisor behind
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  const close = async () => {
    process.off("exit", killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), SUPERVISOR_STOP_MS);
      await exited;
      clearTimeout(timer);
    }
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the supervisor did not listen within ${SUPERVISOR_START_MS / 1000} s`)),
        SUPERVISOR_START_MS,
      );
      const lines = createInterface({ input: child.stdout });
      lines.on("line", (line) => {
        const listening = LISTENING.exec(line);
        if (!listening) return;
        clearTimeout(timer);
        resolve(listening[1] as string);
      });
      child.once("error", (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`${SUPERVISOR_PROGRAM} exited (${signal ?? code}) before it listened`));
      });
    });
    // its later lines are read and dropped, so a full pipe never blocks it
    return { url, token, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * The real e2b adapter and the unmodified SDK against the loopback E2B emulator, whose sandboxes
 * are real desktops in the local Docker engine; every sandbox it made is removed afterwards.
 */
export const e2b: MakeProvider = async () => {
  const emulator = await startE2bEmulator({ instance: `suites-${process.pid}` });
  const faults = new ArmedFaults();
  const connection = {
    apiKey: emulator.apiKey,
    apiUrl: emulator.apiUrl,
    sandboxUrl: emulator.sandboxUrl,
    domain: emulator.domain,
  };
  const made = (apiKey: string) =>
    createE2bProvider({
      kind: "e2b-emulator",
      connection: { ...connection, apiKey },
      sandboxLifetimeMs: 15 * 60_000,
      faults,
    });
  return {
    provider: made(emulator.apiKey),
    faults,
    liveScreens: true,
    appliedEgress: async (ref) => {
      const sandbox = (await emulator.sandboxes()).find((known) => known.sandboxId === ref.providerRef);
      return sandbox ? policyOfE2bNetwork(sandbox.network) : null;
    },
    withWrongCredential: () => made("e2b_wrong"),
    cleanup: () => emulator.close({ removeSandboxes: true }),
  };
};

/**
 * The policy an E2B sandbox's settings carry. `open` and `default` set none (E2B refuses private
 * ranges by itself), so both read as open; the name server an allowlist adds is left out.
 */
function policyOfE2bNetwork(network: SandboxNetwork): EgressPolicy {
  if (!network.denyOut.includes("0.0.0.0/0")) return { level: "open", allow: [] };
  const listed = network.allowOut.filter((host) => host !== "8.8.8.8");
  if (listed.length === 0) return { level: "offline", allow: [] };
  return { level: "allowlist", allow: listed.map((host) => ({ host, ports: [] })) };
}

/**
 * The real daytona adapter and the unmodified SDK against the loopback Daytona emulator, whose
 * sandboxes are real desktops in the local Docker engine; every sandbox it made is removed afterwards.
 */
export const daytona: MakeProvider = async () => {
  const emulator = await startDaytonaEmulator({ instance: `suites-${process.pid}` });
  const faults = new ArmedFaults();
  const made = (apiKey: string) =>
    createDaytonaProvider({
      kind: "daytona-emulator",
      connection: { apiKey, apiUrl: emulator.apiUrl, target: emulator.target },
      faults,
    });
  return {
    provider: made(emulator.apiKey),
    faults,
    liveScreens: true,
    appliedEgress: async (ref) => {
      const sandbox = (await emulator.sandboxes()).find((known) => known.id === ref.providerRef);
      return sandbox ? policyOfDaytonaSettings(sandbox.network) : null;
    },
    withWrongCredential: () => made("dtn_wrong"),
    cleanup: () => emulator.close({ removeSandboxes: true }),
  };
};

/** The policy a Daytona sandbox's network settings carry (the provider writes an address as a /32). */
function policyOfDaytonaSettings(network: {
  networkBlockAll: boolean;
  networkAllowList?: string;
  domainAllowList?: string;
}): EgressPolicy {
  if (network.networkBlockAll) return { level: "offline", allow: [] };
  const listed = [network.networkAllowList, network.domainAllowList]
    .flatMap((list) => (list ? list.split(",") : []))
    .map((host) => ({ host: host.replace(/\/32$/, ""), ports: [] }));
  return listed.length > 0 ? { level: "allowlist", allow: listed } : { level: "open", allow: [] };
}

/**
 * The real box adapter against the loopback Box emulator, whose boxes are real desktops in the
 * local Docker engine; every box it made is removed afterwards. Box's states pass quickly: the
 * emulator's own suite holds them for Box's time.
 */
export const box: MakeProvider = async () => {
  const emulator = await startBoxEmulator({ instance: `suites-${process.pid}`, timings: QUICK_TIMINGS });
  const faults = new ArmedFaults();
  const made = (apiKey: string) =>
    createBoxProvider({ kind: "box-emulator", connection: { apiKey, apiUrl: emulator.apiUrl }, faults });
  return {
    provider: made(emulator.apiKey),
    faults,
    liveScreens: true,
    withWrongCredential: () => made("box_wrong"),
    cleanup: () => emulator.close({ removeBoxes: true }),
  };
};
