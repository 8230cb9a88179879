// `npm run deploy:init`: prepares this Docker host for docker-compose.yml (README "Deploy"). It
// writes what the stack reads and nothing else, and never replaces what is already there:
//   - one secret per purpose in deploy/secrets/ (CUBICLE_SECRETS_DIR), 48 random characters each;
//   - the homes folder (CUBICLE_HOMES_DIR, /var/lib/cubicle), owned by the computers' uid 1000;
//   - .env (CUBICLE_ENV_FILE) with the provider, its Compose profile and the socket's group;
//   - the host firewall rule that keeps computers from opening connections to this host.
// Run it as root (the homes' owner and the firewall rule need it); it says what it could not do.

import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, chownSync, existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { hostFirewallRule } from "@cubicle/host/host-firewall";
import { usesSupervisor } from "@cubicle/providers";
import type { ProviderKind } from "@cubicle/providers/contract";
import { root } from "./lib/run.mjs";

const SECRET_NAMES = [
  "postgres_password",
  "better_auth_secret",
  "encryption_key",
  "screen_capability_key",
  "supervisor_token",
];
/** The computers' user in cubicle-computer (and the supervisor's in the stack). */
const COMPUTER_UID = 1000;
/** What a Compose deployment may run: no test kinds, and no `desktop` (a container has no host desktop). */
const PROVIDERS: readonly ProviderKind[] = ["docker", "e2b", "daytona", "box", "none"];

const secretsDir = resolve(root, process.env.CUBICLE_SECRETS_DIR ?? "deploy/secrets");
const homesDir = resolve(process.env.CUBICLE_HOMES_DIR ?? "/var/lib/cubicle");
const envFile = resolve(root, process.env.CUBICLE_ENV_FILE ?? ".env");
const provider = (process.env.SANDBOX_PROVIDER ?? "docker") as ProviderKind;
const problems: string[] = [];

if (!PROVIDERS.includes(provider)) {
  console.error(`✗ SANDBOX_PROVIDER must be one of ${PROVIDERS.join(", ")} (got "${provider}")`);
  process.exit(1);
}

// secrets: the folder is the owner's alone; the files are readable by the services' own users
// (Compose mounts a file secret as it is on the host, whatever uid the container runs as)
mkdirSync(secretsDir, { recursive: true, mode: 0o700 });
chmodSync(secretsDir, 0o700);
for (const name of SECRET_NAMES) {
  const file = join(secretsDir, name);
  if (existsSync(file)) {
    console.log(`  kept     ${file}`);
    continue;
  }
  writeFileSync(file, `${randomBytes(36).toString("base64url")}\n`, { mode: 0o444 });
  console.log(`  wrote    ${file}`);
}

if (usesSupervisor(provider)) {
  mkdirSync(join(homesDir, "homes"), { recursive: true, mode: 0o755 });
  try {
    for (const folder of [homesDir, join(homesDir, "homes")]) chownSync(folder, COMPUTER_UID, COMPUTER_UID);
    console.log(`  homes    ${homesDir} (uid ${COMPUTER_UID})`);
  } catch {
    problems.push(`run as root, or: sudo chown -R ${COMPUTER_UID}:${COMPUTER_UID} ${homesDir}`);
  }
  const rule = hostFirewallRule();
  const iptables = (args: string[]) =>
    spawnSync("iptables", ["-w", "5", ...args], { stdio: "ignore" }).status === 0;
  if (iptables(["-C", ...rule]) || iptables(["-I", ...rule])) console.log(`  firewall ${rule.join(" ")}`);
  else problems.push(`run as root, or on the Docker host: sudo iptables -I ${rule.join(" ")}`);
}

if (existsSync(envFile)) {
  console.log(`  kept     ${envFile}`);
} else {
  const lines = [`SANDBOX_PROVIDER=${provider}`, `CUBICLE_HOMES_DIR=${homesDir}`];
  if (secretsDir !== resolve(root, "deploy/secrets")) lines.push(`CUBICLE_SECRETS_DIR=${secretsDir}`);
  if (usesSupervisor(provider)) {
    // the supervisor is the Docker provider's alone, and joins the socket's group
    lines.push("COMPOSE_PROFILES=docker", `DOCKER_GID=${statSync("/var/run/docker.sock").gid}`);
  }
  writeFileSync(envFile, `${lines.join("\n")}\n`, { mode: 0o600 });
  console.log(`  wrote    ${envFile}`);
}

if (problems.length > 0) {
  console.error(`\n✗ Not done:\n${problems.map((line) => `  - ${line}`).join("\n")}`);
  process.exit(1);
}
console.log("\nReady: npm run images, then docker compose up -d --wait");
