import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { usesSupervisor } from "@cubicle/providers";
import { type ApiEnv, ConfigError } from "./env.ts";

export interface Secrets {
  betterAuthSecret: string;
  encryptionKey: string;
  previousEncryptionKeys: string[];
  /** Present when the configured provider is `docker`, which needs it to reach the supervisor. */
  supervisorToken: string | undefined;
  /** Signs and seals screen capabilities; the proxy is given the same value. */
  screenCapabilityKey: string;
  previousScreenCapabilityKeys: string[];
}

const MIN_SECRET_LENGTH = 32;

const PLACEHOLDER_VALUES = new Set([
  "changeme",
  "change-me",
  "secret",
  "password",
  "replace-me",
  "your-secret-here",
  "better-auth-secret",
  "development",
  "test",
  "example",
]);

const PLACEHOLDER_FRAGMENTS = [
  "changeme",
  "change-me",
  "change_me",
  "replace-me",
  "replace_me",
  "placeholder",
  "your-secret",
  "xxxxxxxx",
];

function isPlaceholder(value: string): boolean {
  const lower = value.toLowerCase();
  return PLACEHOLDER_VALUES.has(lower) || PLACEHOLDER_FRAGMENTS.some((fragment) => lower.includes(fragment));
}

// Messages describe the problem only: the value itself must never reach logs.
function checkSecret(label: string, value: string): string[] {
  const problems: string[] = [];
  if (value.length < MIN_SECRET_LENGTH)
    problems.push(`${label}: shorter than ${MIN_SECRET_LENGTH} characters`);
  if (isPlaceholder(value)) problems.push(`${label}: is a known placeholder`);
  return problems;
}

const SECRET_FILES = {
  BETTER_AUTH_SECRET: "better-auth-secret",
  ENCRYPTION_KEY: "encryption-key",
  SANDBOX_SUPERVISOR_TOKEN: "supervisor-token",
  SCREEN_CAPABILITY_KEY: "screen-capability-key",
} as const;

type RequiredSecret = keyof typeof SECRET_FILES;

function isErrnoException(error: unknown, code: string): boolean {
  return error instanceof Error && "code" in error && error.code === code;
}

function readSecretFile(file: string): string | undefined {
  try {
    return fs.readFileSync(file, "utf8").trim();
  } catch (error) {
    if (isErrnoException(error, "ENOENT")) return undefined;
    throw error;
  }
}

/**
 * Reads the development secret stored under DATA_DIR, creating it on first use. Persisting it is what keeps
 * sessions and encrypted credentials valid across restarts of a fresh clone.
 */
function loadOrCreateDevSecret(dataDir: string, name: RequiredSecret): { value: string; file: string } {
  const dir = path.join(dataDir, "secrets");
  const file = path.join(dir, SECRET_FILES[name]);
  const existing = readSecretFile(file);
  if (existing !== undefined) return { value: existing, file };

  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const value = randomBytes(48).toString("base64url");
  // Write to a temp file and hard-link it into place: the secret appears complete or not at all, and a
  // concurrent first start cannot overwrite a secret another process already handed out.
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    fs.writeFileSync(tmp, `${value}\n`, { mode: 0o600, flag: "wx" });
    fs.linkSync(tmp, file);
    return { value, file };
  } catch (error) {
    if (!isErrnoException(error, "EEXIST")) throw error;
    const winner = readSecretFile(file);
    if (winner === undefined) throw error;
    return { value: winner, file };
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

/**
 * Validates the secret inputs and, in development only, fills in missing ones from DATA_DIR so a fresh
 * clone runs without setup. Throws a ConfigError listing every problem found.
 */
export function resolveSecrets(env: ApiEnv): Secrets {
  const problems: string[] = [];
  const resolved: Partial<Record<RequiredSecret, string>> = {};
  const provided: Record<RequiredSecret, string | undefined> = {
    BETTER_AUTH_SECRET: env.betterAuthSecret,
    ENCRYPTION_KEY: env.encryptionKey,
    SANDBOX_SUPERVISOR_TOKEN: env.sandbox.supervisorToken,
    SCREEN_CAPABILITY_KEY: env.screens.capabilityKey,
  };
  const required = (Object.keys(SECRET_FILES) as RequiredSecret[]).filter(
    (name) => name !== "SANDBOX_SUPERVISOR_TOKEN" || usesSupervisor(env.sandbox.provider),
  );

  for (const name of required) {
    const value = provided[name];
    if (value !== undefined) {
      problems.push(...checkSecret(name, value));
      resolved[name] = value;
    } else if (env.nodeEnv === "development") {
      const stored = loadOrCreateDevSecret(env.dataDir, name);
      problems.push(...checkSecret(`${name} (from ${stored.file})`, stored.value));
      resolved[name] = stored.value;
    } else {
      problems.push(
        name === "SANDBOX_SUPERVISOR_TOKEN"
          ? `${name}: missing (SANDBOX_PROVIDER=docker needs the token the supervisor was started with: set it or ${name}_FILE)`
          : `${name}: missing (required outside development: set it or ${name}_FILE, or set NODE_ENV=development to generate one under DATA_DIR)`,
      );
    }
  }

  env.previousEncryptionKeys.forEach((key, index) => {
    problems.push(...checkSecret(`ENCRYPTION_KEYS_PREVIOUS[${index}]`, key));
  });

  const { BETTER_AUTH_SECRET: betterAuthSecret, ENCRYPTION_KEY: encryptionKey } = resolved;
  // One leaked or rotated secret must not compromise the other purpose.
  if (betterAuthSecret !== undefined && betterAuthSecret === encryptionKey) {
    problems.push("ENCRYPTION_KEY: must differ from BETTER_AUTH_SECRET");
  }
  if (betterAuthSecret !== undefined) {
    env.previousEncryptionKeys.forEach((key, index) => {
      if (key === betterAuthSecret) {
        problems.push(`ENCRYPTION_KEYS_PREVIOUS[${index}]: must differ from BETTER_AUTH_SECRET`);
      }
    });
  }

  const supervisorToken = resolved.SANDBOX_SUPERVISOR_TOKEN;
  if (
    supervisorToken !== undefined &&
    (supervisorToken === betterAuthSecret || supervisorToken === encryptionKey)
  ) {
    problems.push("SANDBOX_SUPERVISOR_TOKEN: must differ from BETTER_AUTH_SECRET and ENCRYPTION_KEY");
  }

  // Whoever holds a capability key can mint screen access; it must not also open sessions or data.
  const others = Object.entries({
    BETTER_AUTH_SECRET: betterAuthSecret,
    ENCRYPTION_KEY: encryptionKey,
    SANDBOX_SUPERVISOR_TOKEN: supervisorToken,
  });
  const capabilityKeys: [string, string | undefined][] = [
    ["SCREEN_CAPABILITY_KEY", resolved.SCREEN_CAPABILITY_KEY],
    ...env.screens.previousCapabilityKeys.map((key, index): [string, string] => [
      `SCREEN_CAPABILITY_PREVIOUS_KEYS[${index}]`,
      key,
    ]),
  ];
  for (const [label, key] of capabilityKeys.slice(1)) problems.push(...checkSecret(label, key ?? ""));
  for (const [label, key] of capabilityKeys) {
    for (const [other, value] of others) {
      if (key !== undefined && key === value) problems.push(`${label}: must differ from ${other}`);
    }
  }

  const screenCapabilityKey = resolved.SCREEN_CAPABILITY_KEY;
  if (
    problems.length > 0 ||
    betterAuthSecret === undefined ||
    encryptionKey === undefined ||
    screenCapabilityKey === undefined
  ) {
    throw new ConfigError(problems);
  }
  return {
    betterAuthSecret,
    encryptionKey,
    previousEncryptionKeys: [...env.previousEncryptionKeys],
    supervisorToken,
    screenCapabilityKey,
    previousScreenCapabilityKeys: [...env.screens.previousCapabilityKeys],
  };
}
