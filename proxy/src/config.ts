import { ConfigError } from "./config-error.ts";

export interface ProxyConfig {
  readonly host: string;
  readonly port: number;
  /** Same secrets as api's: it mints with them, the proxy verifies. Never logged. */
  readonly capabilityKey: string;
  readonly previousCapabilityKeys: readonly string[];
  /** Where the proxy redeems token ids and follows control leases. */
  readonly apiUrl: string;
  /** Browser origins that may open screen sockets; a request without Origin is not a browser's. */
  readonly allowedOrigins: readonly string[];
  readonly maxSocketsPerIp: number;
  readonly maxSocketsPerSubject: number;
  /** A socket with no bytes either way for this long is closed. */
  readonly idleTimeoutMs: number;
  /** The largest WebSocket message or RFB client message accepted from a browser. */
  readonly maxFrameBytes: number;
  readonly logLevel: string;
}

export const MIN_KEY_LENGTH = 32;
const DEFAULT_ORIGINS = ["http://127.0.0.1:3000", "http://localhost:3000"];
const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

type Env = Record<string, string | undefined>;

// `PORT=` in a .env or compose file means "not set", so blank values fall back to defaults.
function read(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === "" ? undefined : value;
}

function list(value: string | undefined): string[] {
  return (value ?? "")
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

/** The proxy's environment, parsed once at start; every problem is collected into one ConfigError. */
export function parseProxyConfig(env: Env): ProxyConfig {
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

  // secrets: messages about them never echo them
  const capabilityKey = read(env, "SCREEN_CAPABILITY_KEY") ?? "";
  if (capabilityKey === "")
    problems.push("SCREEN_CAPABILITY_KEY is not set; give the proxy the same value as the api");
  else if (capabilityKey.length < MIN_KEY_LENGTH)
    problems.push(`SCREEN_CAPABILITY_KEY is shorter than ${MIN_KEY_LENGTH} characters`);
  const previousCapabilityKeys = list(read(env, "SCREEN_CAPABILITY_PREVIOUS_KEYS"));
  if (previousCapabilityKeys.some((key) => key.length < MIN_KEY_LENGTH))
    problems.push(`SCREEN_CAPABILITY_PREVIOUS_KEYS has a key shorter than ${MIN_KEY_LENGTH} characters`);

  const apiUrl = read(env, "CUBICLE_API_URL") ?? "http://127.0.0.1:3100";
  if (!isHttpUrl(apiUrl)) problems.push(`CUBICLE_API_URL must be an http(s) URL (got "${apiUrl}")`);

  const allowedOrigins = list(read(env, "PROXY_ALLOWED_ORIGINS"));
  for (const origin of allowedOrigins)
    if (!isOrigin(origin))
      problems.push(
        `PROXY_ALLOWED_ORIGINS: "${origin}" is not a bare origin like https://cubicle.example.com`,
      );

  const logLevel = read(env, "LOG_LEVEL") ?? "info";
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}`);

  const config: ProxyConfig = {
    host: read(env, "PROXY_HOST") ?? "127.0.0.1",
    port: integer("PROXY_PORT", 3200, 0, 65535),
    capabilityKey,
    previousCapabilityKeys,
    apiUrl: apiUrl.replace(/\/+$/, ""),
    allowedOrigins:
      allowedOrigins.length > 0
        ? allowedOrigins.filter(isOrigin).map((o) => new URL(o).origin)
        : DEFAULT_ORIGINS,
    maxSocketsPerIp: integer("PROXY_MAX_SOCKETS_PER_IP", 32, 1, 100_000),
    maxSocketsPerSubject: integer("PROXY_MAX_SOCKETS_PER_SUBJECT", 16, 1, 100_000),
    idleTimeoutMs: integer("PROXY_IDLE_TIMEOUT_MS", 900_000, 1_000, 86_400_000),
    maxFrameBytes: integer("PROXY_MAX_FRAME_BYTES", 262_144, 1_024, 16_777_216),
    logLevel,
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}

function isOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === "http:" || url.protocol === "https:") && url.origin === value.replace(/\/$/, "");
  } catch {
    return false;
  }
}
