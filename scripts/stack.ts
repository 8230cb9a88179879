// What `npm start` runs once dependencies are installed: Cubicle's processes on this machine, each
// its own process as in production — the dashboard, the api, the screen proxy and, when computers run
// in local Docker, the supervisor — sharing the development secrets the api keeps under DATA_DIR.
import { type ChildProcess, spawn } from "node:child_process";
import { ConfigError, parseEnv, resolveSecrets } from "@cubicle/api/config";
import { emulatedVendor, runsOnThisMachine, usesSupervisor } from "@cubicle/providers";
import {
  ensureBoxDesktopImage,
  ensureComputerImage,
  ensureDaytonaDesktopImage,
  ensureDockerEngine,
  ensureE2bDesktopImage,
} from "./lib/docker-engine.mjs";
import { root } from "./lib/run.mjs";
import { ensureSystemPackages } from "./lib/system-packages.mjs";
import { ensureWebBuilt, webServerCommand } from "./lib/web.mjs";

const DEFAULT_WEB_PORT = "3000";
const webPort = process.env.WEB_PORT?.trim() || DEFAULT_WEB_PORT;
const webHost = process.env.WEB_HOST?.trim() || "127.0.0.1";

const baseEnv: Record<string, string | undefined> = {
  ...process.env,
  NODE_ENV: process.env.NODE_ENV ?? "development",
  // the dashboard's origin must be trusted by the api (cookie changes) and the proxy (screen sockets)
  TRUSTED_ORIGINS: process.env.TRUSTED_ORIGINS ?? `http://${webHost}:${webPort},http://localhost:${webPort}`,
  // browsers open screens on the proxy this command runs, wherever PROXY_PORT puts it
  PROXY_PUBLIC_URL:
    process.env.PROXY_PUBLIC_URL ??
    (process.env.PROXY_PORT ? `ws://127.0.0.1:${process.env.PROXY_PORT}` : undefined),
};

let api: ReturnType<typeof parseEnv>;
let secrets: ReturnType<typeof resolveSecrets>;
try {
  api = parseEnv(baseEnv);
  secrets = resolveSecrets(api);
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(`Cubicle cannot start; fix its configuration:\n${error.message}`);
  process.exit(78);
}

const tsx = (entry: string) => [process.execPath, "--import", "tsx", entry];
const children = new Set<ChildProcess>();
let stopping = false;

function run(name: string, command: string[], env: Record<string, string | undefined>): void {
  const [executable = process.execPath, ...args] = command;
  const child = spawn(executable, args, { cwd: root, env, stdio: "inherit" });
  children.add(child);
  child.on("exit", (code, signal) => {
    children.delete(child);
    if (stopping) {
      if (children.size === 0) process.exit(process.exitCode ?? 0);
      return;
    }
    // One process gone means Cubicle is not whole: stop the others and exit with its status.
    console.error(`Cubicle's ${name} stopped (${signal ?? `exit ${code}`}); stopping the rest.`);
    process.exitCode = code || 1;
    stop("SIGTERM");
  });
}

function stop(signal: NodeJS.Signals): void {
  stopping = true;
  if (children.size === 0) process.exit(process.exitCode ?? 0);
  for (const child of children) child.kill(signal);
}
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => stop(signal));

async function supervisorAnswers(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/health`, { signal: AbortSignal.timeout(1_000) })).ok;
  } catch {
    return false;
  }
}

// Computers on this machine (Docker, or the host's own X stack when the owner picks "this host")
// need the machine's packages; remote providers need none.
if (runsOnThisMachine(api.sandbox.provider)) ensureSystemPackages("start");
ensureWebBuilt();

const supervisorUrl = new URL(api.sandbox.supervisorUrl);
const supervisorIsLocal = ["127.0.0.1", "localhost", "[::1]"].includes(supervisorUrl.hostname);
if (
  usesSupervisor(api.sandbox.provider) &&
  supervisorIsLocal &&
  !(await supervisorAnswers(supervisorUrl.origin))
) {
  await ensureDockerEngine();
  await ensureComputerImage();
  run("supervisor", tsx("supervisor/src/main.ts"), {
    ...baseEnv,
    SANDBOX_SUPERVISOR_TOKEN: secrets.supervisorToken,
    DATA_DIR: api.dataDir,
    SUPERVISOR_HOST: supervisorUrl.hostname,
    SUPERVISOR_PORT: supervisorUrl.port || "80",
  });
}

// a vendor emulator (tests and development) runs inside the api; its sandboxes are desktops in the
// local Docker engine, made from an image built here like the computer image
const emulator = emulatedVendor(api.sandbox.provider);
if (emulator) {
  await ensureDockerEngine();
  await ensureComputerImage();
  const ensureImage = {
    e2b: ensureE2bDesktopImage,
    daytona: ensureDaytonaDesktopImage,
    box: ensureBoxDesktopImage,
  };
  await ensureImage[emulator]();
}

const apiHost = api.host === "0.0.0.0" ? "127.0.0.1" : api.host;
const apiUrl = `http://${apiHost}:${api.port}`;

run("screen proxy", tsx("proxy/src/main.ts"), {
  ...baseEnv,
  SCREEN_CAPABILITY_KEY: secrets.screenCapabilityKey,
  SCREEN_CAPABILITY_PREVIOUS_KEYS: secrets.previousScreenCapabilityKeys.join(","),
  CUBICLE_API_URL: apiUrl,
  PROXY_ALLOWED_ORIGINS: process.env.PROXY_ALLOWED_ORIGINS ?? api.trustedOrigins.join(","),
});
run("api", tsx("api/src/main.ts"), {
  ...baseEnv,
  // The dashboard states each browser's address, connecting to apiUrl (so from apiHost, a local
  // address): the api believes it from there, besides any proxies of the deployment's own.
  TRUSTED_PROXIES: [process.env.TRUSTED_PROXIES, apiHost === "localhost" ? "loopback" : apiHost]
    .filter(Boolean)
    .join(","),
});
run("dashboard", webServerCommand(webPort, webHost), {
  ...baseEnv,
  CUBICLE_API_URL: apiUrl,
  NEXT_TELEMETRY_DISABLED: "1",
  NODE_ENV: "production",
});
