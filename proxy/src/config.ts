import { bareOrigin, type Env, envReader, invalidTrustedProxies, TRUSTED_PROXY_RULE } from "@cubicle/config";

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
  /**
   * Proxies in front of this one (e.g. a TLS terminator) whose X-Forwarded-For is believed:
   * addresses, CIDRs, or loopback / linklocal / uniquelocal. Empty: a socket's address is its peer's.
   */
  readonly trustedProxies: readonly string[];
  readonly maxSocketsPerIp: number;
  readonly maxSocketsPerSubject: number;
  /** A socket with no bytes either way for this long is closed. */
  readonly idleTimeoutMs: number;
  /** The largest WebSocket message or RFB client message accepted from a browser. */
  readonly maxFrameBytes: number;
  /**
   * How many bytes of one recording may wait for api to take them; past that the recording is
   * ended incomplete and the live socket goes on (recording never slows a screen).
   */
  readonly recordingBufferBytes: number;
  /**
   * How long one request of a recording's upload carries records before the next continues it:
   * api's server cuts a request whose body still arrives after its requestTimeout (5 min).
   */
  readonly recordingPartMs: number;
  /** The bearer token /metrics asks for; unset, there is no /metrics. Never logged. */
  readonly metricsToken: string | undefined;
  readonly logLevel: string;
}

export const MIN_KEY_LENGTH = 32;
/** Variables that may be given as files instead (`<NAME>_FILE`). */
const PROXY_SECRETS = ["SCREEN_CAPABILITY_KEY", "SCREEN_CAPABILITY_PREVIOUS_KEYS", "METRICS_TOKEN"];
const DEFAULT_ORIGINS = ["http://127.0.0.1:3000", "http://localhost:3000"];
const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

/** The proxy's environment, parsed once at start; every problem is collected into one ConfigError. */
export function parseProxyConfig(source: Env): ProxyConfig {
  const env = envReader(source, { secrets: PROXY_SECRETS });

  // secrets: messages about them never echo them
  const capabilityKey = env.string("SCREEN_CAPABILITY_KEY") ?? "";
  if (capabilityKey === "")
    env.problem("SCREEN_CAPABILITY_KEY is not set; give the proxy the same value as the api");
  else if (capabilityKey.length < MIN_KEY_LENGTH)
    env.problem(`SCREEN_CAPABILITY_KEY is shorter than ${MIN_KEY_LENGTH} characters`);
  const previousCapabilityKeys = env.list("SCREEN_CAPABILITY_PREVIOUS_KEYS");
  if (previousCapabilityKeys.some((key) => key.length < MIN_KEY_LENGTH))
    env.problem(`SCREEN_CAPABILITY_PREVIOUS_KEYS has a key shorter than ${MIN_KEY_LENGTH} characters`);

  const metricsToken = env.string("METRICS_TOKEN");
  if (metricsToken !== undefined && metricsToken.length < MIN_KEY_LENGTH)
    env.problem(`METRICS_TOKEN is shorter than ${MIN_KEY_LENGTH} characters`);

  const apiUrl = env.string("CUBICLE_API_URL") ?? "http://127.0.0.1:3100";
  if (!isHttpUrl(apiUrl)) env.problem(`CUBICLE_API_URL must be an http(s) URL (got "${apiUrl}")`);

  const allowedOrigins = env.list("PROXY_ALLOWED_ORIGINS");
  for (const origin of allowedOrigins)
    if (bareOrigin(origin) === undefined)
      env.problem(`PROXY_ALLOWED_ORIGINS: "${origin}" is not a bare origin like https://cubicle.example.com`);

  const trustedProxies = env.list("TRUSTED_PROXIES");
  for (const proxy of invalidTrustedProxies(trustedProxies))
    env.problem(`TRUSTED_PROXIES: "${proxy}" ${TRUSTED_PROXY_RULE}`);

  const logLevel = env.string("LOG_LEVEL") ?? "info";
  if (!LOG_LEVELS.includes(logLevel)) env.problem(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}`);

  const config: ProxyConfig = {
    host: env.string("PROXY_HOST") ?? "127.0.0.1",
    port: env.integer("PROXY_PORT", 3200, 0, 65535),
    capabilityKey,
    previousCapabilityKeys,
    apiUrl: apiUrl.replace(/\/+$/, ""),
    allowedOrigins:
      allowedOrigins.length > 0
        ? allowedOrigins.map(bareOrigin).filter((origin) => origin !== undefined)
        : DEFAULT_ORIGINS,
    trustedProxies,
    maxSocketsPerIp: env.integer("PROXY_MAX_SOCKETS_PER_IP", 32, 1, 100_000),
    maxSocketsPerSubject: env.integer("PROXY_MAX_SOCKETS_PER_SUBJECT", 16, 1, 100_000),
    idleTimeoutMs: env.integer("PROXY_IDLE_TIMEOUT_MS", 900_000, 1_000, 86_400_000),
    maxFrameBytes: env.integer("PROXY_MAX_FRAME_BYTES", 262_144, 1_024, 16_777_216),
    // at least a few of the largest records (MAX_RECORD_PAYLOAD), so that one big update is not a fall behind
    recordingBufferBytes: env.integer(
      "PROXY_RECORDING_BUFFER_BYTES",
      32 * 1024 * 1024,
      4 * 1024 * 1024,
      1024 * 1024 * 1024,
    ),
    // at most 4 min: a part, then the bytes still buffered for it, must reach api within its 5
    recordingPartMs: env.integer("PROXY_RECORDING_PART_MS", 60_000, 1_000, 240_000),
    metricsToken,
    logLevel,
  };
  env.assertValid();
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
