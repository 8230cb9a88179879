import path from "node:path";
import {
  bareOrigin,
  ConfigError,
  invalidTrustedProxies,
  TRUSTED_PROXY_RULE,
  withSecretFiles,
} from "@cubicle/config";
import { BACKEND_VARIABLES, type BackendVariables, PROVIDER_KINDS } from "@cubicle/providers";
import type { ProviderKind } from "@cubicle/providers/contract";
import { z } from "zod";

export { ConfigError };

export const NODE_ENVS = ["development", "test", "production"] as const;
export type NodeEnv = (typeof NODE_ENVS)[number];

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface ApiEnv {
  readonly nodeEnv: NodeEnv;
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  readonly databaseUrl: string | undefined;
  readonly publicUrl: string;
  readonly trustedOrigins: readonly string[];
  readonly logLevel: LogLevel;
  /**
   * Peers whose X-Forwarded-For is believed (addresses, CIDRs, or proxy-addr's names `loopback`,
   * `linklocal`, `uniquelocal`); empty: every request's client is the peer itself.
   */
  readonly trustedProxies: readonly string[];
  /** The bearer token /metrics asks for; unset, there is no /metrics. A secret: never logged. */
  readonly metricsToken: string | undefined;
  /** Whether Better Auth's sign-in/sign-up limits apply (kept in the database, per client address). */
  readonly authRateLimit: boolean;
  readonly betterAuthSecret: string | undefined;
  readonly encryptionKey: string | undefined;
  readonly previousEncryptionKeys: readonly string[];
  readonly screens: ScreensEnv;
  readonly sandbox: SandboxEnv;
  readonly sessions: SessionsEnv;
  readonly checkpoints: CheckpointsEnv;
  readonly recordings: RecordingsEnv;
}

/** Screen recordings (docs/architecture.md, "Domain"). */
export interface RecordingsEnv {
  /** Where the recording store keeps its sealed chunks and videos. */
  readonly dir: string;
}

/** Revisions of homes (checkpoints; docs/architecture.md, "Domain"). */
export interface CheckpointsEnv {
  /** Where the file checkpoint store keeps its objects and revisions. */
  readonly dir: string;
  /** Retention: the newest this many revisions of a home are always kept… */
  readonly keepLast: number;
  /** …and the newest revision of each of this many days. */
  readonly keepDailyForDays: number;
}

/** Computer-use sessions of automations (execution leases; docs/architecture.md, "Domain"). */
export interface SessionsEnv {
  /** How long a session lasts past its last heartbeat. */
  readonly leaseMs: number;
}

/**
 * Live screens (docs/architecture.md, "Capabilities and live screens"). The capability keys are
 * secrets, validated in secrets.ts.
 */
export interface ScreensEnv {
  readonly capabilityKey: string | undefined;
  /** Retired keys still accepted for verification, for the overlap of a rotation. */
  readonly previousCapabilityKeys: readonly string[];
  /** Where browsers open screen sockets (the proxy), handed out with each capability. */
  readonly proxyPublicUrl: string;
  /** Where the api itself opens screen sockets (its session recorders); PROXY_PUBLIC_URL unless set. */
  readonly proxyInternalUrl: string;
  /** How long a take-control lasts unless renewed. */
  readonly controlLeaseMs: number;
}

/**
 * Where computers run (docs/architecture.md, "The provider contract" and "Configuration"). Vendor
 * keys are secrets: never logged, never returned.
 */
export interface SandboxEnv {
  readonly provider: ProviderKind;
  readonly supervisorUrl: string;
  readonly supervisorToken: string | undefined;
  readonly idleMs: number;
  /** How often the records of running computers are checked against their provider. */
  readonly reconcileMs: number;
  /** How often running computers' providers are asked what their egress policy refused. */
  readonly egressPollMs: number;
  /** At most one audit entry per computer and refused destination in this long. */
  readonly egressAuditWindowMs: number;
  readonly commandTimeoutMs: number;
  /** Each backend's own variables (its key, addresses, folders), as its row in the table names them. */
  readonly variables: BackendVariables;
}

const DEFAULT_PORT = 3100;
const DEFAULT_WEB_ORIGINS = ["http://127.0.0.1:3000", "http://localhost:3000"];

// `PORT=` in a .env or compose file means "not set", so blank values fall back to defaults.
const trimOrUnset = (value: unknown): unknown => {
  if (typeof value !== "string") return value;
  const trimmed = value.trim();
  return trimmed === "" ? undefined : trimmed;
};

const optionalTrimmed = z.preprocess(trimOrUnset, z.string().optional());
/** An http(s) URL without its trailing slashes, or unset. */
const optionalHttpUrl = optionalTrimmed.transform((v, ctx) => {
  if (v === undefined) return undefined;
  if (/^https?:\/\//.test(v) && URL.canParse(v)) return v.replace(/\/+$/, "");
  ctx.addIssue({ code: "custom", message: "must be an http(s) URL" });
  return z.NEVER;
});

/** A ws(s) URL without credentials, query or trailing slashes, or unset. */
const optionalWebSocketUrl = optionalTrimmed.transform((v, ctx) => {
  if (v === undefined) return undefined;
  const url = URL.canParse(v) ? new URL(v) : undefined;
  if (
    !url ||
    (url.protocol !== "ws:" && url.protocol !== "wss:") ||
    url.username !== "" ||
    url.password !== "" ||
    url.search !== "" ||
    url.hash !== ""
  ) {
    ctx.addIssue({ code: "custom", message: "must be a ws:// or wss:// URL without credentials or query" });
    return z.NEVER;
  }
  return v.replace(/\/+$/, "");
});

function splitList(value: string | undefined): string[] {
  if (value === undefined) return [];
  return value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

function positiveMilliseconds(fallback: number) {
  return optionalTrimmed.transform((v, ctx) => {
    if (v === undefined) return fallback;
    const ms = /^\d+$/.test(v) ? Number(v) : Number.NaN;
    if (!Number.isSafeInteger(ms) || ms < 1) {
      ctx.addIssue({ code: "custom", message: "must be a positive whole number of milliseconds" });
      return z.NEVER;
    }
    return ms;
  });
}

function wholeNumber(fallback: number, min: number, max: number) {
  return optionalTrimmed.transform((v, ctx) => {
    if (v === undefined) return fallback;
    const n = /^\d+$/.test(v) ? Number(v) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      ctx.addIssue({ code: "custom", message: `must be a whole number from ${min} to ${max}` });
      return z.NEVER;
    }
    return n;
  });
}

/** A comma-separated list of absolute paths, resolved. */
const absolutePaths = optionalTrimmed.transform((v, ctx) => {
  const roots = splitList(v);
  if (roots.some((root) => !path.isAbsolute(root))) {
    ctx.addIssue({ code: "custom", message: "must be a comma-separated list of absolute paths" });
    return z.NEVER;
  }
  return roots.map((root) => path.resolve(root));
});

/** The backends' own variables, each read as its row says (a secret may also come from a file). */
function backendVariables() {
  const readers = {
    secret: optionalTrimmed,
    text: optionalTrimmed,
    url: optionalHttpUrl,
    paths: absolutePaths,
  };
  return Object.fromEntries(BACKEND_VARIABLES.map(({ name, type }) => [name, readers[type]]));
}

const CONTROL_LEASE_MS = { default: 900_000, min: 10_000, testMin: 1_000, max: 4 * 3_600_000 };
const SESSION_LEASE_MS = { default: 60_000, min: 10_000, testMin: 1_000, max: 3_600_000 };

const MIN_METRICS_TOKEN_LENGTH = 32;

const ORIGIN_RULE =
  "must be an http(s) origin without path, query, credentials or wildcard (e.g. https://example.com)";

const schema = z
  .object({
    NODE_ENV: z.preprocess(
      trimOrUnset,
      z.enum(NODE_ENVS, { error: `must be one of ${NODE_ENVS.join(", ")}` }).default("production"),
    ),
    HOST: optionalTrimmed.transform((v) => v ?? "127.0.0.1"),
    PORT: optionalTrimmed.transform((v, ctx) => {
      if (v === undefined) return DEFAULT_PORT;
      const port = /^\d+$/.test(v) ? Number(v) : Number.NaN;
      if (!Number.isInteger(port) || port < 1 || port > 65535) {
        ctx.addIssue({ code: "custom", message: "must be an integer between 1 and 65535" });
        return z.NEVER;
      }
      return port;
    }),
    DATA_DIR: optionalTrimmed.transform((v) => path.resolve(v ?? ".data")),
    DATABASE_URL: optionalTrimmed.transform((v, ctx) => {
      if (v === undefined) return undefined;
      let valid = /^postgres(ql)?:\/\//.test(v);
      if (valid) {
        try {
          new URL(v);
        } catch {
          valid = false;
        }
      }
      if (!valid) {
        // The URL usually embeds a password, so the message must not echo it back.
        ctx.addIssue({ code: "custom", message: "must be a postgres:// or postgresql:// URL" });
        return z.NEVER;
      }
      return v;
    }),
    // The Postgres server's password alone (the same secret file Postgres starts with), put into
    // DATABASE_URL, so a deployment keeps one copy of it
    DATABASE_PASSWORD: optionalTrimmed,
    PUBLIC_URL: optionalTrimmed.transform((v, ctx) => {
      if (v === undefined) return undefined;
      const origin = bareOrigin(v);
      if (origin === undefined) {
        ctx.addIssue({ code: "custom", message: ORIGIN_RULE });
        return z.NEVER;
      }
      return origin;
    }),
    TRUSTED_ORIGINS: optionalTrimmed.transform((v, ctx) => {
      if (v === undefined) return undefined;
      const items = splitList(v);
      const invalid = items.filter((item) => bareOrigin(item) === undefined);
      if (invalid.length > 0) {
        const list = invalid.map((item) => JSON.stringify(item)).join(", ");
        ctx.addIssue({ code: "custom", message: `${list}: ${ORIGIN_RULE}` });
        return z.NEVER;
      }
      return items.map((item) => bareOrigin(item) ?? item);
    }),
    LOG_LEVEL: z.preprocess(
      trimOrUnset,
      z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(", ")}` }).default("info"),
    ),
    // "true" used to believe any peer's X-Forwarded-For: such a setting must not be ignored silently
    // ("false" says what no TRUSTED_PROXIES now means).
    TRUST_PROXY: optionalTrimmed.transform((v, ctx) => {
      if (v === undefined || v === "false") return;
      ctx.addIssue({
        code: "custom",
        message:
          "is replaced by TRUSTED_PROXIES: list the addresses or CIDRs of your proxies (or leave both unset)",
      });
      return z.NEVER;
    }),
    TRUSTED_PROXIES: optionalTrimmed.transform((v, ctx) => {
      const items = splitList(v);
      const invalid = invalidTrustedProxies(items);
      if (invalid.length > 0) {
        const list = invalid.map((item) => JSON.stringify(item)).join(", ");
        ctx.addIssue({ code: "custom", message: `${list}: ${TRUSTED_PROXY_RULE}` });
        return z.NEVER;
      }
      return items;
    }),
    METRICS_TOKEN: optionalTrimmed.transform((v, ctx) => {
      if (v !== undefined && v.length < MIN_METRICS_TOKEN_LENGTH) {
        // a secret: the message must not echo it
        ctx.addIssue({ code: "custom", message: `must be at least ${MIN_METRICS_TOKEN_LENGTH} characters` });
        return z.NEVER;
      }
      return v;
    }),
    AUTH_RATE_LIMIT: z.preprocess(
      trimOrUnset,
      z.enum(["on", "off"], { error: 'must be "on" or "off"' }).optional(),
    ),
    // Secrets are validated in secrets.ts, where the development fallback lives.
    BETTER_AUTH_SECRET: optionalTrimmed,
    ENCRYPTION_KEY: optionalTrimmed,
    ENCRYPTION_KEYS_PREVIOUS: optionalTrimmed.transform(splitList),
    SCREEN_CAPABILITY_KEY: optionalTrimmed,
    SCREEN_CAPABILITY_PREVIOUS_KEYS: optionalTrimmed.transform(splitList),
    PROXY_PUBLIC_URL: optionalWebSocketUrl.transform((v) => v ?? "ws://127.0.0.1:3200"),
    PROXY_INTERNAL_URL: optionalWebSocketUrl,
    CONTROL_LEASE_MS: positiveMilliseconds(CONTROL_LEASE_MS.default),
    SESSION_LEASE_MS: positiveMilliseconds(SESSION_LEASE_MS.default),
    SANDBOX_PROVIDER: optionalTrimmed.transform((v, ctx) => {
      if (v === undefined) return "docker" as const;
      if ((PROVIDER_KINDS as readonly string[]).includes(v)) return v as ProviderKind;
      ctx.addIssue({
        code: "custom",
        message: `${JSON.stringify(v)} is not a sandbox provider; use one of ${PROVIDER_KINDS.join(", ")}`,
      });
      return z.NEVER;
    }),
    SANDBOX_SUPERVISOR_URL: optionalHttpUrl.transform((v) => v ?? "http://127.0.0.1:7091"),
    SANDBOX_SUPERVISOR_TOKEN: optionalTrimmed,
    CHECKPOINT_DIR: optionalTrimmed,
    RECORDING_DIR: optionalTrimmed,
    // At least one revision is always kept: it is what a replacement machine is restored from.
    CHECKPOINT_KEEP_LAST: wholeNumber(20, 1, 10_000),
    CHECKPOINT_KEEP_DAILY_DAYS: wholeNumber(14, 0, 3_650),
    SANDBOX_IDLE_MS: positiveMilliseconds(600_000),
    SANDBOX_RECONCILE_MS: positiveMilliseconds(30_000),
    SANDBOX_EGRESS_POLL_MS: positiveMilliseconds(5_000),
    SANDBOX_EGRESS_AUDIT_WINDOW_MS: positiveMilliseconds(600_000),
    SANDBOX_COMMAND_TIMEOUT_MS: positiveMilliseconds(300_000),
    ...backendVariables(),
  })
  .transform((raw, ctx): ApiEnv => {
    // Tests may use short leases to watch them expire; real ones are long enough to be renewed.
    const minLeaseMs = raw.NODE_ENV === "test" ? CONTROL_LEASE_MS.testMin : CONTROL_LEASE_MS.min;
    if (raw.CONTROL_LEASE_MS < minLeaseMs || raw.CONTROL_LEASE_MS > CONTROL_LEASE_MS.max) {
      ctx.addIssue({
        code: "custom",
        path: ["CONTROL_LEASE_MS"],
        message: `must be from ${minLeaseMs} to ${CONTROL_LEASE_MS.max} milliseconds`,
      });
    }
    const minSessionMs = raw.NODE_ENV === "test" ? SESSION_LEASE_MS.testMin : SESSION_LEASE_MS.min;
    if (raw.SESSION_LEASE_MS < minSessionMs || raw.SESSION_LEASE_MS > SESSION_LEASE_MS.max) {
      ctx.addIssue({
        code: "custom",
        path: ["SESSION_LEASE_MS"],
        message: `must be from ${minSessionMs} to ${SESSION_LEASE_MS.max} milliseconds`,
      });
    }
    if (raw.DATABASE_PASSWORD !== undefined && raw.DATABASE_URL === undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["DATABASE_PASSWORD"],
        message: "is set but DATABASE_URL is not; set DATABASE_URL to the server's URL without the password",
      });
    }
    const publicUrl = raw.PUBLIC_URL ?? `http://127.0.0.1:${raw.PORT}`;
    // The API's own origin must always be trusted or its own pages could not call it.
    const trustedOrigins = [...new Set([publicUrl, ...(raw.TRUSTED_ORIGINS ?? DEFAULT_WEB_ORIGINS)])];
    return {
      nodeEnv: raw.NODE_ENV,
      host: raw.HOST,
      port: raw.PORT,
      dataDir: raw.DATA_DIR,
      databaseUrl: withPassword(raw.DATABASE_URL, raw.DATABASE_PASSWORD),
      publicUrl,
      trustedOrigins: Object.freeze(trustedOrigins),
      logLevel: raw.LOG_LEVEL,
      trustedProxies: Object.freeze(raw.TRUSTED_PROXIES),
      metricsToken: raw.METRICS_TOKEN,
      // Tests sign in many people from one address in seconds; they turn it on where they test it.
      authRateLimit: (raw.AUTH_RATE_LIMIT ?? (raw.NODE_ENV === "test" ? "off" : "on")) === "on",
      betterAuthSecret: raw.BETTER_AUTH_SECRET,
      encryptionKey: raw.ENCRYPTION_KEY,
      previousEncryptionKeys: Object.freeze(raw.ENCRYPTION_KEYS_PREVIOUS),
      screens: Object.freeze({
        capabilityKey: raw.SCREEN_CAPABILITY_KEY,
        previousCapabilityKeys: Object.freeze(raw.SCREEN_CAPABILITY_PREVIOUS_KEYS),
        proxyPublicUrl: raw.PROXY_PUBLIC_URL,
        proxyInternalUrl: raw.PROXY_INTERNAL_URL ?? raw.PROXY_PUBLIC_URL,
        controlLeaseMs: raw.CONTROL_LEASE_MS,
      }),
      sandbox: Object.freeze({
        provider: raw.SANDBOX_PROVIDER,
        supervisorUrl: raw.SANDBOX_SUPERVISOR_URL,
        supervisorToken: raw.SANDBOX_SUPERVISOR_TOKEN,
        idleMs: raw.SANDBOX_IDLE_MS,
        reconcileMs: raw.SANDBOX_RECONCILE_MS,
        egressPollMs: raw.SANDBOX_EGRESS_POLL_MS,
        egressAuditWindowMs: raw.SANDBOX_EGRESS_AUDIT_WINDOW_MS,
        commandTimeoutMs: raw.SANDBOX_COMMAND_TIMEOUT_MS,
        variables: Object.freeze(
          Object.fromEntries(
            BACKEND_VARIABLES.map(({ name }) => [name, (raw as Record<string, unknown>)[name]]),
          ),
        ) as BackendVariables,
      }),
      sessions: Object.freeze({ leaseMs: raw.SESSION_LEASE_MS }),
      checkpoints: Object.freeze({
        dir: path.resolve(raw.DATA_DIR, raw.CHECKPOINT_DIR ?? "checkpoints"),
        keepLast: raw.CHECKPOINT_KEEP_LAST,
        keepDailyForDays: raw.CHECKPOINT_KEEP_DAILY_DAYS,
      }),
      recordings: Object.freeze({ dir: path.resolve(raw.DATA_DIR, raw.RECORDING_DIR ?? "recordings") }),
    };
  });

function withPassword(url: string | undefined, password: string | undefined): string | undefined {
  if (url === undefined || password === undefined) return url;
  const withIt = new URL(url);
  withIt.password = encodeURIComponent(password);
  return withIt.toString();
}

/**
 * Parses the process environment into a typed, frozen object. Call once at startup and pass the
 * result around, so every module sees the same validated values.
 */
export function parseEnv(given: Record<string, string | undefined>): ApiEnv {
  const { env: source, problems } = withSecretFiles(given, API_SECRETS);
  const result = schema.safeParse(source);
  if (!result.success || problems.length > 0) {
    const byVariable = new Map<string, string>();
    for (const issue of result.error?.issues ?? []) {
      const name = String(issue.path[0] ?? "environment");
      if (!byVariable.has(name)) byVariable.set(name, `${name}: ${issue.message}`);
    }
    throw new ConfigError([...problems, ...byVariable.values()]);
  }
  return Object.freeze(result.data);
}

/** Variables that may be given as files instead (`<NAME>_FILE`, as Compose's `secrets:` mount them). */
const API_SECRETS = [
  "BETTER_AUTH_SECRET",
  "ENCRYPTION_KEY",
  "ENCRYPTION_KEYS_PREVIOUS",
  "SCREEN_CAPABILITY_KEY",
  "SCREEN_CAPABILITY_PREVIOUS_KEYS",
  "SANDBOX_SUPERVISOR_TOKEN",
  "METRICS_TOKEN",
  // a Postgres URL holds the database's password
  "DATABASE_URL",
  "DATABASE_PASSWORD",
  ...BACKEND_VARIABLES.filter(({ type }) => type === "secret").map(({ name }) => name),
];
