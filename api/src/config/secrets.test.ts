import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigError, parseEnv } from "./env.ts";
import { resolveSecrets } from "./secrets.ts";

const AUTH = "auth-secret-0123456789abcdefghijklmnop";
const ENC = "encryption-key-0123456789abcdefghijklm";
const OLD = "old-encryption-key-0123456789abcdefghij";
const CAP = "screen-capability-key-0123456789abcdefg";
const missing = (name: string) =>
  `${name}: missing (required outside development: set it or ${name}_FILE, or set NODE_ENV=development to generate one under DATA_DIR)`;

let dataDir: string;

beforeEach(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cubicle-secrets-"));
});

afterEach(() => {
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** The screen capability key is given unless a test says otherwise (`SCREEN_CAPABILITY_KEY: undefined`). */
function envWith(vars: Record<string, string | undefined>) {
  return parseEnv({ DATA_DIR: dataDir, SANDBOX_PROVIDER: "none", SCREEN_CAPABILITY_KEY: CAP, ...vars });
}

function problemsOf(vars: Record<string, string | undefined>): string[] {
  try {
    resolveSecrets(envWith(vars));
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
  throw new Error("expected resolveSecrets to throw");
}

const mode = (file: string) => fs.statSync(file).mode & 0o777;

describe("resolveSecrets with provided values", () => {
  it.each(["production", "test", "development"])("returns them in %s", (nodeEnv) => {
    const secrets = resolveSecrets(
      envWith({
        NODE_ENV: nodeEnv,
        BETTER_AUTH_SECRET: AUTH,
        ENCRYPTION_KEY: ENC,
        ENCRYPTION_KEYS_PREVIOUS: OLD,
      }),
    );
    expect(secrets).toEqual({
      betterAuthSecret: AUTH,
      encryptionKey: ENC,
      previousEncryptionKeys: [OLD],
      supervisorToken: undefined,
      screenCapabilityKey: CAP,
      previousScreenCapabilityKeys: [],
    });
  });

  it("does not touch DATA_DIR when both are provided in development", () => {
    resolveSecrets(envWith({ NODE_ENV: "development", BETTER_AUTH_SECRET: AUTH, ENCRYPTION_KEY: ENC }));
    expect(fs.existsSync(path.join(dataDir, "secrets"))).toBe(false);
  });
});

describe("resolveSecrets in development", () => {
  it("generates missing secrets, persists them with 0600/0700, and reuses them on restart", () => {
    const first = resolveSecrets(envWith({ NODE_ENV: "development", SCREEN_CAPABILITY_KEY: undefined }));
    const second = resolveSecrets(envWith({ NODE_ENV: "development", SCREEN_CAPABILITY_KEY: undefined }));

    expect(second).toEqual(first);
    expect(first.screenCapabilityKey).toMatch(/^[A-Za-z0-9_-]{64}$/);
    expect(first.betterAuthSecret).toMatch(/^[A-Za-z0-9_-]{64}$/);
    expect(first.encryptionKey).toMatch(/^[A-Za-z0-9_-]{64}$/);
    expect(first.betterAuthSecret).not.toBe(first.encryptionKey);

    const dir = path.join(dataDir, "secrets");
    expect(mode(dir)).toBe(0o700);
    for (const [file, value] of [
      ["better-auth-secret", first.betterAuthSecret],
      ["encryption-key", first.encryptionKey],
      ["screen-capability-key", first.screenCapabilityKey],
    ] as const) {
      expect(mode(path.join(dir, file))).toBe(0o600);
      expect(fs.readFileSync(path.join(dir, file), "utf8").trim()).toBe(value);
    }
    expect(fs.readdirSync(dir).sort()).toEqual([
      "better-auth-secret",
      "encryption-key",
      "screen-capability-key",
    ]);
  });

  it("only fills in the missing one", () => {
    const secrets = resolveSecrets(envWith({ NODE_ENV: "development", BETTER_AUTH_SECRET: AUTH }));
    expect(secrets.betterAuthSecret).toBe(AUTH);
    expect(fs.existsSync(path.join(dataDir, "secrets", "better-auth-secret"))).toBe(false);
    expect(fs.readFileSync(path.join(dataDir, "secrets", "encryption-key"), "utf8").trim()).toBe(
      secrets.encryptionKey,
    );
  });

  it("validates a stored secret that was edited by hand", () => {
    fs.mkdirSync(path.join(dataDir, "secrets"));
    fs.writeFileSync(path.join(dataDir, "secrets", "encryption-key"), "short\n");
    const problems = problemsOf({ NODE_ENV: "development", BETTER_AUTH_SECRET: AUTH });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^ENCRYPTION_KEY \(from .*encryption-key\): shorter than 32 characters$/);
  });
});

describe("resolveSecrets refusals", () => {
  it.each(["production", "test"])("requires every secret in %s", (nodeEnv) => {
    expect(problemsOf({ NODE_ENV: nodeEnv, SCREEN_CAPABILITY_KEY: undefined })).toEqual([
      missing("BETTER_AUTH_SECRET"),
      missing("ENCRYPTION_KEY"),
      missing("SCREEN_CAPABILITY_KEY"),
    ]);
    expect(fs.existsSync(path.join(dataDir, "secrets"))).toBe(false);
  });

  it("defaults to production rules when NODE_ENV is unset", () => {
    expect(problemsOf({ ENCRYPTION_KEY: ENC })).toEqual([
      "BETTER_AUTH_SECRET: missing (required outside development: set it or BETTER_AUTH_SECRET_FILE, or set NODE_ENV=development to generate one under DATA_DIR)",
    ]);
  });

  it.each(["production", "development"])("rejects short secrets in %s", (nodeEnv) => {
    expect(
      problemsOf({ NODE_ENV: nodeEnv, BETTER_AUTH_SECRET: AUTH, ENCRYPTION_KEY: "a".repeat(31) }),
    ).toEqual(["ENCRYPTION_KEY: shorter than 32 characters"]);
  });

  it.each(["changeme", "SECRET", "Development", "your-secret-here"])(
    "rejects the exact placeholder %s (also short)",
    (value) => {
      expect(problemsOf({ BETTER_AUTH_SECRET: value, ENCRYPTION_KEY: ENC })).toEqual([
        "BETTER_AUTH_SECRET: shorter than 32 characters",
        "BETTER_AUTH_SECRET: is a known placeholder",
      ]);
    },
  );

  it.each([
    "please-CHANGEME-before-deploying-this-app",
    "change_me_to_a_long_random_value_0123456789",
    "replace-me-with-something-long-and-random",
    "placeholder-value-for-the-encryption-key",
    "your-secret-goes-here-and-is-long-enough",
    "key-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
  ])("rejects a long value containing a placeholder: %s", (value) => {
    expect(problemsOf({ NODE_ENV: "development", BETTER_AUTH_SECRET: AUTH, ENCRYPTION_KEY: value })).toEqual([
      "ENCRYPTION_KEY: is a known placeholder",
    ]);
  });

  it("rejects the same value for both purposes", () => {
    expect(problemsOf({ BETTER_AUTH_SECRET: AUTH, ENCRYPTION_KEY: AUTH })).toEqual([
      "ENCRYPTION_KEY: must differ from BETTER_AUTH_SECRET",
    ]);
  });

  it("validates previous encryption keys", () => {
    expect(
      problemsOf({
        BETTER_AUTH_SECRET: AUTH,
        ENCRYPTION_KEY: ENC,
        ENCRYPTION_KEYS_PREVIOUS: `${OLD},tiny,${AUTH}`,
      }),
    ).toEqual([
      "ENCRYPTION_KEYS_PREVIOUS[1]: shorter than 32 characters",
      "ENCRYPTION_KEYS_PREVIOUS[2]: must differ from BETTER_AUTH_SECRET",
    ]);
  });

  it("reports every problem at once, one per line, without the values", () => {
    const leaked = "changeme-leaked-value";
    let error: unknown;
    try {
      resolveSecrets(envWith({ NODE_ENV: "test", ENCRYPTION_KEY: leaked }));
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = error instanceof Error ? error.message : "";
    expect(message.split("\n")).toEqual([
      "BETTER_AUTH_SECRET: missing (required outside development: set it or BETTER_AUTH_SECRET_FILE, or set NODE_ENV=development to generate one under DATA_DIR)",
      "ENCRYPTION_KEY: shorter than 32 characters",
      "ENCRYPTION_KEY: is a known placeholder",
    ]);
    expect(message).not.toContain(leaked);
  });
});

describe("the supervisor token", () => {
  const TOKEN = "supervisor-token-0123456789abcdefghijk";

  it("is required outside development when SANDBOX_PROVIDER is docker, and named", () => {
    const problems = problemsOf({
      NODE_ENV: "production",
      SANDBOX_PROVIDER: "docker",
      BETTER_AUTH_SECRET: AUTH,
      ENCRYPTION_KEY: ENC,
    });
    expect(problems).toEqual([
      "SANDBOX_SUPERVISOR_TOKEN: missing (SANDBOX_PROVIDER=docker needs the token the supervisor was started with: set it or SANDBOX_SUPERVISOR_TOKEN_FILE)",
    ]);
  });

  it("is not required by other providers", () => {
    const secrets = resolveSecrets(
      envWith({
        NODE_ENV: "production",
        SANDBOX_PROVIDER: "fake",
        BETTER_AUTH_SECRET: AUTH,
        ENCRYPTION_KEY: ENC,
      }),
    );
    expect(secrets.supervisorToken).toBeUndefined();
  });

  it("is checked like the other secrets and kept separate from them", () => {
    const base = {
      NODE_ENV: "production",
      SANDBOX_PROVIDER: "docker",
      BETTER_AUTH_SECRET: AUTH,
      ENCRYPTION_KEY: ENC,
    };
    expect(problemsOf({ ...base, SANDBOX_SUPERVISOR_TOKEN: "short" })).toContain(
      "SANDBOX_SUPERVISOR_TOKEN: shorter than 32 characters",
    );
    expect(problemsOf({ ...base, SANDBOX_SUPERVISOR_TOKEN: AUTH })).toContain(
      "SANDBOX_SUPERVISOR_TOKEN: must differ from BETTER_AUTH_SECRET and ENCRYPTION_KEY",
    );
    expect(resolveSecrets(envWith({ ...base, SANDBOX_SUPERVISOR_TOKEN: TOKEN })).supervisorToken).toBe(TOKEN);
  });

  it("is generated and kept under DATA_DIR in development", () => {
    const first = resolveSecrets(envWith({ NODE_ENV: "development", SANDBOX_PROVIDER: "docker" }));
    const second = resolveSecrets(envWith({ NODE_ENV: "development", SANDBOX_PROVIDER: "docker" }));
    expect(first.supervisorToken?.length).toBeGreaterThanOrEqual(32);
    expect(second.supervisorToken).toBe(first.supervisorToken);
    expect(mode(path.join(dataDir, "secrets", "supervisor-token"))).toBe(0o600);
  });
});

describe("the screen capability key", () => {
  const base = { NODE_ENV: "production", BETTER_AUTH_SECRET: AUTH, ENCRYPTION_KEY: ENC };

  it("is required outside development and checked like the other secrets", () => {
    expect(problemsOf({ ...base, SCREEN_CAPABILITY_KEY: undefined })).toEqual([
      missing("SCREEN_CAPABILITY_KEY"),
    ]);
    expect(problemsOf({ ...base, SCREEN_CAPABILITY_KEY: "short" })).toEqual([
      "SCREEN_CAPABILITY_KEY: shorter than 32 characters",
    ]);
  });

  it("is generated and kept under DATA_DIR in development", () => {
    const dev = { NODE_ENV: "development", SCREEN_CAPABILITY_KEY: undefined };
    const first = resolveSecrets(envWith(dev));
    expect(resolveSecrets(envWith(dev)).screenCapabilityKey).toBe(first.screenCapabilityKey);
    const file = path.join(dataDir, "secrets", "screen-capability-key");
    expect(fs.readFileSync(file, "utf8").trim()).toBe(first.screenCapabilityKey);
    expect(mode(file)).toBe(0o600);
  });

  it("must differ from every other secret, and so must the previous keys", () => {
    const token = "supervisor-token-0123456789abcdefghijk";
    expect(problemsOf({ ...base, SCREEN_CAPABILITY_KEY: AUTH })).toEqual([
      "SCREEN_CAPABILITY_KEY: must differ from BETTER_AUTH_SECRET",
    ]);
    expect(
      problemsOf({
        ...base,
        SANDBOX_PROVIDER: "docker",
        SANDBOX_SUPERVISOR_TOKEN: token,
        SCREEN_CAPABILITY_KEY: token,
        SCREEN_CAPABILITY_PREVIOUS_KEYS: `${OLD},tiny,${ENC}`,
      }),
    ).toEqual([
      "SCREEN_CAPABILITY_PREVIOUS_KEYS[1]: shorter than 32 characters",
      "SCREEN_CAPABILITY_KEY: must differ from SANDBOX_SUPERVISOR_TOKEN",
      "SCREEN_CAPABILITY_PREVIOUS_KEYS[2]: must differ from ENCRYPTION_KEY",
    ]);
  });

  it("returns the previous keys for verification during a rotation", () => {
    const secrets = resolveSecrets(envWith({ ...base, SCREEN_CAPABILITY_PREVIOUS_KEYS: OLD }));
    expect(secrets).toMatchObject({ screenCapabilityKey: CAP, previousScreenCapabilityKeys: [OLD] });
  });
});
