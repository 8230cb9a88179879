import path from "node:path";
import { DEFAULT_SUPERVISOR_PORT } from "./wire.ts";

export class ConfigError extends Error {
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(problems.join("\n"));
    this.name = "ConfigError";
    this.problems = Object.freeze([...problems]);
  }
}

export interface SupervisorConfig {
  readonly host: string;
  readonly port: number;
  /** The bearer token every route but /health requires. A secret: never logged. */
  readonly token: string;
  readonly dataDir: string;
  /** `DATA_DIR/homes`: one folder per home key, bind-mounted into its computer. */
  readonly homesDir: string;
  readonly image: string;
  readonly network: string;
  readonly memoryMb: number;
  readonly cpus: number;
  readonly pidsLimit: number;
  /** `auto`: drop computers' new connections to the host itself when iptables can be used. */
  readonly hostFirewall: "auto" | "off";
}

export const MIN_TOKEN_LENGTH = 32;

type Env = Record<string, string | undefined>;

// `PORT=` in a .env or compose file means "not set", so blank values fall back to defaults.
function read(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === "" ? undefined : value;
}

/**
 * The supervisor's environment, parsed once at start. Every problem is collected, so one failed
 * start lists everything to fix.
 */
export function parseConfig(env: Env): SupervisorConfig {
  const problems: string[] = [];

  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = read(env, name);
    if (raw === undefined) return fallback;
    const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
    if (!Number.isSafeInteger(value) || value < min || value > max) {
      problems.push(`${name} must be a whole number from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return value;
  };

  // the token is a secret: messages about it never echo it
  const token = env.SANDBOX_SUPERVISOR_TOKEN?.trim() ?? "";
  if (token === "") {
    problems.push(
      `SANDBOX_SUPERVISOR_TOKEN is not set; set it to a random secret of at least ${MIN_TOKEN_LENGTH} characters (the api uses the same value)`,
    );
  } else if (token.length < MIN_TOKEN_LENGTH) {
    problems.push(
      `SANDBOX_SUPERVISOR_TOKEN is too short (${token.length} characters); use at least ${MIN_TOKEN_LENGTH} random characters`,
    );
  }

  const dataDirRaw = read(env, "DATA_DIR");
  if (dataDirRaw === undefined)
    problems.push("DATA_DIR is not set; set it to the folder that holds computer homes");
  const dataDir = path.resolve(dataDirRaw ?? ".");

  const cpusRaw = read(env, "SUPERVISOR_CPUS");
  let cpus = 1;
  if (cpusRaw !== undefined) {
    cpus = /^\d+(\.\d+)?$/.test(cpusRaw) ? Number(cpusRaw) : Number.NaN;
    if (!(cpus >= 0.1 && cpus <= 256)) {
      problems.push(`SUPERVISOR_CPUS must be a number of CPUs from 0.1 to 256 (got "${cpusRaw}")`);
      cpus = 1;
    }
  }

  const firewall = read(env, "SUPERVISOR_HOST_FIREWALL") ?? "auto";
  if (firewall !== "auto" && firewall !== "off") {
    problems.push(`SUPERVISOR_HOST_FIREWALL must be "auto" or "off" (got "${firewall}")`);
  }

  const config: SupervisorConfig = {
    host: read(env, "SUPERVISOR_HOST") ?? "127.0.0.1",
    // 0 picks a free port (tests)
    port: integer("SUPERVISOR_PORT", DEFAULT_SUPERVISOR_PORT, 0, 65_535),
    token,
    dataDir,
    homesDir: path.join(dataDir, "homes"),
    image: read(env, "SUPERVISOR_IMAGE") ?? "cubicle-computer:latest",
    network: read(env, "SUPERVISOR_NETWORK") ?? "cubicle-computers",
    memoryMb: integer("SUPERVISOR_MEMORY_MB", 2048, 256, 1_048_576),
    cpus,
    pidsLimit: integer("SUPERVISOR_PIDS_LIMIT", 512, 64, 1_000_000),
    hostFirewall: firewall === "off" ? "off" : "auto",
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}
