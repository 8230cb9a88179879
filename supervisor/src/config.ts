import { isIPv4 } from "node:net";
import path from "node:path";
import { type Env, envReader } from "@cubicle/config";
import { DEFAULT_SUPERVISOR_PORT } from "@cubicle/providers/supervisor-wire";

export { ConfigError } from "@cubicle/config";

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
  /**
   * The host address computers' screen ports are published on, and the one the screen proxy dials:
   * loopback when the proxy runs on the host (`npm start`); in the Compose stack, the gateway of a
   * network only the proxy joins (docker-compose.yml, `screens`).
   */
  readonly screenHost: string;
  readonly memoryMb: number;
  readonly cpus: number;
  readonly pidsLimit: number;
  /**
   * `auto`: drop computers' new connections to the host itself, and enforce their egress policies,
   * when iptables can be used.
   */
  readonly hostFirewall: "auto" | "off";
  /**
   * The DNS servers computers use (Docker's embedded resolver forwards their queries there, from
   * the computer's own network namespace) and the supervisor resolves allowlisted names with; the
   * egress policies let DNS reach exactly these. Empty when the host names none a computer can
   * reach: Docker's own default then, and computers under an enforced policy have no DNS until
   * SUPERVISOR_DNS is set. Null when SUPERVISOR_DNS is unset: the host's, read at start where the
   * firewall programs run (a supervisor in a container sees only Docker's 127.0.0.11; the firewall
   * container, on the host's network, gets the host's resolv.conf from Docker).
   */
  readonly dns: readonly string[] | null;
  /**
   * The container the firewall programs run in (`docker exec`), so the supervisor itself needs no
   * privilege (the Compose stack's `firewall` service); null: they run on this machine, as root.
   */
  readonly firewallContainer: string | null;
}

/** The configuration once the computers' DNS servers are known. */
export type DockerConfig = Omit<SupervisorConfig, "dns"> & { readonly dns: readonly string[] };

export const MIN_TOKEN_LENGTH = 32;

/**
 * The supervisor's environment, parsed once at start. Every problem is collected, so one failed
 * start lists everything to fix.
 */
export function parseConfig(source: Env): SupervisorConfig {
  // the token may be given as a file instead (SANDBOX_SUPERVISOR_TOKEN_FILE)
  const env = envReader(source, { secrets: ["SANDBOX_SUPERVISOR_TOKEN"] });

  // the token is a secret: messages about it never echo it
  const token = env.string("SANDBOX_SUPERVISOR_TOKEN") ?? "";
  if (token === "") {
    env.problem(
      `SANDBOX_SUPERVISOR_TOKEN is not set; set it to a random secret of at least ${MIN_TOKEN_LENGTH} characters (the api uses the same value)`,
    );
  } else if (token.length < MIN_TOKEN_LENGTH) {
    env.problem(
      `SANDBOX_SUPERVISOR_TOKEN is too short (${token.length} characters); use at least ${MIN_TOKEN_LENGTH} random characters`,
    );
  }

  const dataDirRaw = env.string("DATA_DIR");
  if (dataDirRaw === undefined)
    env.problem("DATA_DIR is not set; set it to the folder that holds computer homes");
  const dataDir = path.resolve(dataDirRaw ?? ".");

  const cpusRaw = env.string("SUPERVISOR_CPUS");
  let cpus = 1;
  if (cpusRaw !== undefined) {
    cpus = /^\d+(\.\d+)?$/.test(cpusRaw) ? Number(cpusRaw) : Number.NaN;
    if (!(cpus >= 0.1 && cpus <= 256)) {
      env.problem(`SUPERVISOR_CPUS must be a number of CPUs from 0.1 to 256 (got "${cpusRaw}")`);
      cpus = 1;
    }
  }

  const firewall = env.string("SUPERVISOR_HOST_FIREWALL") ?? "auto";
  if (firewall !== "auto" && firewall !== "off") {
    env.problem(`SUPERVISOR_HOST_FIREWALL must be "auto" or "off" (got "${firewall}")`);
  }

  const screenHost = env.string("SUPERVISOR_SCREEN_HOST") ?? "127.0.0.1";
  if (!isIPv4(screenHost) || screenHost === "0.0.0.0") {
    env.problem(
      `SUPERVISOR_SCREEN_HOST must be one IPv4 address of this host, not every one (got "${screenHost}")`,
    );
  }

  const dnsRaw = env.string("SUPERVISOR_DNS");
  const dns =
    dnsRaw === undefined
      ? null
      : dnsRaw
          .split(",")
          .map((address) => address.trim())
          .filter(Boolean);
  if (dns !== null && (dns.length === 0 || !dns.every(isIPv4))) {
    env.problem(`SUPERVISOR_DNS must be IPv4 addresses separated by commas (got "${dnsRaw}")`);
  }

  const config: SupervisorConfig = {
    host: env.string("SUPERVISOR_HOST") ?? "127.0.0.1",
    // 0 picks a free port (tests)
    port: env.integer("SUPERVISOR_PORT", DEFAULT_SUPERVISOR_PORT, 0, 65_535),
    token,
    dataDir,
    homesDir: path.join(dataDir, "homes"),
    image: env.string("SUPERVISOR_IMAGE") ?? "cubicle-computer:latest",
    network: env.string("SUPERVISOR_NETWORK") ?? "cubicle-computers",
    screenHost,
    memoryMb: env.integer("SUPERVISOR_MEMORY_MB", 2048, 256, 1_048_576),
    cpus,
    pidsLimit: env.integer("SUPERVISOR_PIDS_LIMIT", 512, 64, 1_000_000),
    hostFirewall: firewall === "off" ? "off" : "auto",
    dns,
    firewallContainer: env.string("SUPERVISOR_FIREWALL_CONTAINER") || null,
  };
  env.assertValid();
  return Object.freeze(config);
}
