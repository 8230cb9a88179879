import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, parseEnv } from "./env.ts";

function errorOf(source: Record<string, string | undefined>): ConfigError {
  try {
    parseEnv(source);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error("expected parseEnv to throw");
}

describe("parseEnv defaults", () => {
  it("uses strict, local-only defaults when nothing is set", () => {
    const env = parseEnv({});
    expect(env).toEqual({
      nodeEnv: "production",
      host: "127.0.0.1",
      port: 3100,
      dataDir: path.resolve(".data"),
      databaseUrl: undefined,
      publicUrl: "http://127.0.0.1:3100",
      trustedOrigins: ["http://127.0.0.1:3100", "http://127.0.0.1:3000", "http://localhost:3000"],
      logLevel: "info",
      trustedProxies: [],
      metricsToken: undefined,
      authRateLimit: true,
      betterAuthSecret: undefined,
      encryptionKey: undefined,
      previousEncryptionKeys: [],
      screens: {
        capabilityKey: undefined,
        previousCapabilityKeys: [],
        proxyPublicUrl: "ws://127.0.0.1:3200",
        proxyInternalUrl: "ws://127.0.0.1:3200",
        controlLeaseMs: 900_000,
      },
      sandbox: expect.objectContaining({ provider: "docker" }),
      sessions: { leaseMs: 60_000 },
      checkpoints: { dir: path.resolve(".data", "checkpoints"), keepLast: 20, keepDailyForDays: 14 },
      recordings: { dir: path.resolve(".data", "recordings") },
    });
  });

  it("treats blank values as unset", () => {
    const env = parseEnv({ NODE_ENV: "", PORT: "  ", LOG_LEVEL: "", ENCRYPTION_KEY: "" });
    expect(env.nodeEnv).toBe("production");
    expect(env.port).toBe(3100);
    expect(env.logLevel).toBe("info");
    expect(env.encryptionKey).toBeUndefined();
  });

  it("returns a deeply frozen object", () => {
    const env = parseEnv({ ENCRYPTION_KEYS_PREVIOUS: "a" });
    expect(Object.isFrozen(env)).toBe(true);
    expect(Object.isFrozen(env.trustedOrigins)).toBe(true);
    expect(Object.isFrozen(env.previousEncryptionKeys)).toBe(true);
    expect(Object.isFrozen(env.screens.previousCapabilityKeys)).toBe(true);
  });
});

describe("checkpoint settings", () => {
  it("keeps checkpoints under DATA_DIR unless CHECKPOINT_DIR says otherwise", () => {
    expect(parseEnv({ DATA_DIR: "/srv/cubicle" }).checkpoints.dir).toBe("/srv/cubicle/checkpoints");
    expect(parseEnv({ DATA_DIR: "/srv/cubicle", CHECKPOINT_DIR: "/backup/revisions" }).checkpoints.dir).toBe(
      "/backup/revisions",
    );
  });

  it("keeps recordings under DATA_DIR unless RECORDING_DIR says otherwise", () => {
    expect(parseEnv({ DATA_DIR: "/srv/cubicle" }).recordings.dir).toBe("/srv/cubicle/recordings");
    expect(parseEnv({ DATA_DIR: "/srv/cubicle", RECORDING_DIR: "/mnt/tapes" }).recordings.dir).toBe(
      "/mnt/tapes",
    );
    expect(parseEnv({ DATA_DIR: "/srv/cubicle", RECORDING_DIR: "tapes" }).recordings.dir).toBe(
      "/srv/cubicle/tapes",
    );
  });

  it("reads the retention policy and refuses one that would keep nothing", () => {
    const env = parseEnv({ CHECKPOINT_KEEP_LAST: "5", CHECKPOINT_KEEP_DAILY_DAYS: "0" });
    expect(env.checkpoints).toMatchObject({ keepLast: 5, keepDailyForDays: 0 });
    expect(errorOf({ CHECKPOINT_KEEP_LAST: "0" }).message).toContain("CHECKPOINT_KEEP_LAST");
    expect(errorOf({ CHECKPOINT_KEEP_DAILY_DAYS: "two" }).message).toContain("CHECKPOINT_KEEP_DAILY_DAYS");
  });
});

describe("parseEnv overrides", () => {
  it.each(["development", "test", "production"] as const)("accepts NODE_ENV=%s", (value) => {
    expect(parseEnv({ NODE_ENV: value }).nodeEnv).toBe(value);
  });

  it("reads HOST and PORT", () => {
    const env = parseEnv({ HOST: "0.0.0.0", PORT: "8080" });
    expect(env.host).toBe("0.0.0.0");
    expect(env.port).toBe(8080);
  });

  it("derives the default PUBLIC_URL from PORT", () => {
    const env = parseEnv({ PORT: "4000" });
    expect(env.publicUrl).toBe("http://127.0.0.1:4000");
    expect(env.trustedOrigins[0]).toBe("http://127.0.0.1:4000");
  });

  it("accepts the PORT bounds", () => {
    expect(parseEnv({ PORT: "1" }).port).toBe(1);
    expect(parseEnv({ PORT: "65535" }).port).toBe(65535);
  });

  it("resolves DATA_DIR to an absolute path", () => {
    expect(parseEnv({ DATA_DIR: "some/dir" }).dataDir).toBe(path.resolve("some/dir"));
    expect(parseEnv({ DATA_DIR: "/srv/cubicle" }).dataDir).toBe("/srv/cubicle");
  });

  it.each(["postgres://u:p@db:5432/cubicle", "postgresql://localhost/cubicle"])(
    "accepts DATABASE_URL %s",
    (url) => {
      expect(parseEnv({ DATABASE_URL: url }).databaseUrl).toBe(url);
    },
  );

  it("puts DATABASE_PASSWORD into DATABASE_URL, encoded, and refuses it without a URL", () => {
    expect(
      parseEnv({ DATABASE_URL: "postgres://cubicle@db:5432/cubicle", DATABASE_PASSWORD: "p@ss/word:1" })
        .databaseUrl,
    ).toBe("postgres://cubicle:p%40ss%2Fword%3A1@db:5432/cubicle");
    const problems = errorOf({ DATABASE_PASSWORD: "p@ss/word:1" }).problems;
    expect(problems).toEqual([expect.stringMatching(/^DATABASE_PASSWORD: is set but DATABASE_URL is not/)]);
    expect(problems.join("\n")).not.toContain("p@ss");
  });

  it("normalizes PUBLIC_URL to an origin and always trusts it", () => {
    const env = parseEnv({
      PUBLIC_URL: "https://cubicle.example.com/",
      TRUSTED_ORIGINS: "https://app.example.com",
    });
    expect(env.publicUrl).toBe("https://cubicle.example.com");
    expect(env.trustedOrigins).toEqual(["https://cubicle.example.com", "https://app.example.com"]);
  });

  it("replaces the default web origins with TRUSTED_ORIGINS, trimming and de-duplicating", () => {
    const env = parseEnv({
      TRUSTED_ORIGINS: " https://a.example.com , http://b.example.com:8080/,,https://a.example.com",
    });
    expect(env.trustedOrigins).toEqual([
      "http://127.0.0.1:3100",
      "https://a.example.com",
      "http://b.example.com:8080",
    ]);
  });

  it("reads LOG_LEVEL", () => {
    expect(parseEnv({ LOG_LEVEL: "debug" }).logLevel).toBe("debug");
    expect(parseEnv({ LOG_LEVEL: "silent" }).logLevel).toBe("silent");
  });

  it("reads TRUSTED_PROXIES: addresses, CIDRs and proxy-addr's named ranges", () => {
    const env = parseEnv({ TRUSTED_PROXIES: " 10.0.0.0/8, loopback,2001:db8::1 ,192.0.2.7" });
    expect(env.trustedProxies).toEqual(["10.0.0.0/8", "loopback", "2001:db8::1", "192.0.2.7"]);
    expect(Object.isFrozen(env.trustedProxies)).toBe(true);
  });

  it("accepts TRUST_PROXY=false, which is what no TRUSTED_PROXIES means", () => {
    expect(parseEnv({ TRUST_PROXY: "false" }).trustedProxies).toEqual([]);
  });

  it("reads METRICS_TOKEN and AUTH_RATE_LIMIT, which is off by default only for tests", () => {
    expect(parseEnv({ METRICS_TOKEN: "m".repeat(32) }).metricsToken).toBe("m".repeat(32));
    expect(parseEnv({ NODE_ENV: "development" }).authRateLimit).toBe(true);
    expect(parseEnv({ NODE_ENV: "test" }).authRateLimit).toBe(false);
    expect(parseEnv({ NODE_ENV: "test", AUTH_RATE_LIMIT: "on" }).authRateLimit).toBe(true);
    expect(parseEnv({ AUTH_RATE_LIMIT: "off" }).authRateLimit).toBe(false);
  });

  it("keeps raw secret inputs and splits previous keys", () => {
    const env = parseEnv({
      BETTER_AUTH_SECRET: "auth-secret",
      ENCRYPTION_KEY: "enc-key",
      ENCRYPTION_KEYS_PREVIOUS: "old-1, old-2,",
    });
    expect(env.betterAuthSecret).toBe("auth-secret");
    expect(env.encryptionKey).toBe("enc-key");
    expect(env.previousEncryptionKeys).toEqual(["old-1", "old-2"]);
  });
});

describe("parseEnv secrets as files", () => {
  it("reads each secret's *_FILE, and lists a file it cannot read with the other problems", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "cubicle-api-secrets-"));
    try {
      const write = (name: string, value: string) => {
        writeFileSync(path.join(dir, name), `${value}\n`);
        return path.join(dir, name);
      };
      const env = parseEnv({
        BETTER_AUTH_SECRET_FILE: write("auth", "auth-secret-from-a-file"),
        ENCRYPTION_KEY_FILE: write("encryption", "encryption-key-from-a-file"),
        DATABASE_URL_FILE: write("database", "postgres://cubicle:pw@db:5432/cubicle"),
        E2B_API_KEY_FILE: write("e2b", "e2b_key_from_a_file"),
      });
      expect(env.betterAuthSecret).toBe("auth-secret-from-a-file");
      expect(env.encryptionKey).toBe("encryption-key-from-a-file");
      expect(env.databaseUrl).toBe("postgres://cubicle:pw@db:5432/cubicle");
      expect(env.sandbox.variables.E2B_API_KEY).toBe("e2b_key_from_a_file");

      const missing = path.join(dir, "missing");
      expect(errorOf({ SCREEN_CAPABILITY_KEY_FILE: missing, PORT: "0" }).problems).toEqual([
        `SCREEN_CAPABILITY_KEY_FILE: cannot read ${missing} (no such file)`,
        "PORT: must be an integer between 1 and 65535",
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("parseEnv errors", () => {
  it.each([
    [{ NODE_ENV: "prod" }, "NODE_ENV: must be one of development, test, production"],
    [{ PORT: "0" }, "PORT: must be an integer between 1 and 65535"],
    [{ PORT: "65536" }, "PORT: must be an integer between 1 and 65535"],
    [{ PORT: "80.5" }, "PORT: must be an integer between 1 and 65535"],
    [{ PORT: "http" }, "PORT: must be an integer between 1 and 65535"],
    [{ DATABASE_URL: "mysql://db/cubicle" }, "DATABASE_URL: must be a postgres:// or postgresql:// URL"],
    [{ PUBLIC_URL: "ftp://example.com" }, "PUBLIC_URL: must be an http(s) origin"],
    [{ PUBLIC_URL: "https://example.com/api" }, "PUBLIC_URL: must be an http(s) origin"],
    [{ PUBLIC_URL: "not a url" }, "PUBLIC_URL: must be an http(s) origin"],
    [
      { TRUSTED_ORIGINS: "https://ok.example.com,https://bad.example.com/path" },
      'TRUSTED_ORIGINS: "https://bad.example.com/path"',
    ],
    [{ TRUSTED_ORIGINS: "example.com" }, 'TRUSTED_ORIGINS: "example.com"'],
    [{ LOG_LEVEL: "verbose" }, "LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent"],
    [{ TRUST_PROXY: "true" }, "TRUST_PROXY: is replaced by TRUSTED_PROXIES"],
    [
      { TRUSTED_PROXIES: "10.0.0.1, 10.0.0.0/33, proxy.example.com" },
      'TRUSTED_PROXIES: "10.0.0.0/33", "proxy.example.com": must be an IP address, a CIDR',
    ],
    [{ METRICS_TOKEN: "short" }, "METRICS_TOKEN: must be at least 32 characters"],
    [{ AUTH_RATE_LIMIT: "yes" }, 'AUTH_RATE_LIMIT: must be "on" or "off"'],
  ])("rejects %o", (source, expected) => {
    const error = errorOf(source);
    expect(error.message).toContain(expected);
    expect(error.problems).toHaveLength(1);
  });

  it("names every bad variable, one per line", () => {
    const error = errorOf({ PORT: "-1", LOG_LEVEL: "loud", TRUSTED_PROXIES: "nowhere" });
    expect(error.message.split("\n")).toEqual([
      "PORT: must be an integer between 1 and 65535",
      "LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent",
      `TRUSTED_PROXIES: "nowhere": must be an IP address, a CIDR (10.0.0.0/8) or one of loopback, linklocal, uniquelocal`,
    ]);
    expect(error.name).toBe("ConfigError");
  });

  it("does not echo METRICS_TOKEN, a secret", () => {
    expect(errorOf({ METRICS_TOKEN: "hunter2" }).message).not.toContain("hunter2");
  });

  it("does not echo DATABASE_URL, which may hold a password", () => {
    const error = errorOf({ DATABASE_URL: "mysql://user:hunter2@db/cubicle" });
    expect(error.message).not.toContain("hunter2");
  });
});

describe("screen settings", () => {
  it("keep the capability keys raw and split the previous ones", () => {
    const env = parseEnv({
      SCREEN_CAPABILITY_KEY: "cap-key",
      SCREEN_CAPABILITY_PREVIOUS_KEYS: "old-1, old-2,",
    });
    expect(env.screens.capabilityKey).toBe("cap-key");
    expect(env.screens.previousCapabilityKeys).toEqual(["old-1", "old-2"]);
  });

  it("read the proxy's public URL", () => {
    expect(parseEnv({ PROXY_PUBLIC_URL: "wss://screens.example.com/" }).screens.proxyPublicUrl).toBe(
      "wss://screens.example.com",
    );
    expect(parseEnv({ PROXY_PUBLIC_URL: "wss://example.com/proxy" }).screens.proxyPublicUrl).toBe(
      "wss://example.com/proxy",
    );
    for (const bad of ["https://example.com", "ws://user:pw@example.com", "ws://example.com/?t=1", "nope"]) {
      expect(() => parseEnv({ PROXY_PUBLIC_URL: bad }), bad).toThrow(
        "PROXY_PUBLIC_URL: must be a ws:// or wss:// URL",
      );
    }
  });

  it("reaches the proxy at PROXY_INTERNAL_URL, or else where browsers do", () => {
    expect(parseEnv({ PROXY_PUBLIC_URL: "wss://screens.example.com" }).screens.proxyInternalUrl).toBe(
      "wss://screens.example.com",
    );
    const both = parseEnv({
      PROXY_PUBLIC_URL: "wss://screens.example.com",
      PROXY_INTERNAL_URL: "ws://proxy:3200/",
    });
    expect(both.screens).toMatchObject({
      proxyPublicUrl: "wss://screens.example.com",
      proxyInternalUrl: "ws://proxy:3200",
    });
    expect(() => parseEnv({ PROXY_INTERNAL_URL: "http://proxy:3200" })).toThrow(
      "PROXY_INTERNAL_URL: must be a ws:// or wss:// URL",
    );
  });

  it("bound the control lease: 10 s to 4 h, and down to 1 s in tests", () => {
    expect(parseEnv({ CONTROL_LEASE_MS: "10000" }).screens.controlLeaseMs).toBe(10_000);
    expect(parseEnv({ CONTROL_LEASE_MS: "14400000" }).screens.controlLeaseMs).toBe(14_400_000);
    expect(parseEnv({ NODE_ENV: "test", CONTROL_LEASE_MS: "1000" }).screens.controlLeaseMs).toBe(1_000);
    expect(errorOf({ CONTROL_LEASE_MS: "9999" }).problems).toEqual([
      "CONTROL_LEASE_MS: must be from 10000 to 14400000 milliseconds",
    ]);
    expect(errorOf({ NODE_ENV: "test", CONTROL_LEASE_MS: "999" }).problems).toEqual([
      "CONTROL_LEASE_MS: must be from 1000 to 14400000 milliseconds",
    ]);
    expect(errorOf({ CONTROL_LEASE_MS: "14400001" }).message).toContain("CONTROL_LEASE_MS");
    expect(errorOf({ CONTROL_LEASE_MS: "15m" }).message).toContain(
      "CONTROL_LEASE_MS: must be a positive whole number",
    );
  });
});

describe("session settings", () => {
  it("bound the session lease: 10 s to 1 h, and down to 1 s in tests", () => {
    expect(parseEnv({ SESSION_LEASE_MS: "10000" }).sessions.leaseMs).toBe(10_000);
    expect(parseEnv({ SESSION_LEASE_MS: "3600000" }).sessions.leaseMs).toBe(3_600_000);
    expect(parseEnv({ NODE_ENV: "test", SESSION_LEASE_MS: "1000" }).sessions.leaseMs).toBe(1_000);
    expect(errorOf({ SESSION_LEASE_MS: "9999" }).problems).toEqual([
      "SESSION_LEASE_MS: must be from 10000 to 3600000 milliseconds",
    ]);
    expect(errorOf({ NODE_ENV: "test", SESSION_LEASE_MS: "999" }).problems).toEqual([
      "SESSION_LEASE_MS: must be from 1000 to 3600000 milliseconds",
    ]);
    expect(errorOf({ SESSION_LEASE_MS: "3600001" }).message).toContain("SESSION_LEASE_MS");
    expect(errorOf({ SESSION_LEASE_MS: "1m" }).message).toContain(
      "SESSION_LEASE_MS: must be a positive whole number",
    );
  });
});

describe("sandbox settings", () => {
  it("default to docker with the documented values", () => {
    const env = parseEnv({});
    expect(env.sandbox).toMatchObject({
      provider: "docker",
      supervisorUrl: "http://127.0.0.1:7091",
      idleMs: 600_000,
      commandTimeoutMs: 300_000,
      variables: expect.objectContaining({ DESKTOP_ALLOWED_ROOTS: [] }),
    });
  });

  it("refuse an unknown provider in one line naming all ten values", () => {
    let message = "";
    try {
      parseEnv({ SANDBOX_PROVIDER: "bogus" });
    } catch (error) {
      message = error instanceof ConfigError ? error.message : "";
    }
    expect(message).toBe(
      'SANDBOX_PROVIDER: "bogus" is not a sandbox provider; use one of docker, e2b, daytona, box, desktop, none, fake, e2b-emulator, daytona-emulator, box-emulator',
    );
  });

  it("validate timings, the supervisor URL and desktop roots", () => {
    expect(() => parseEnv({ SANDBOX_IDLE_MS: "0" })).toThrow(
      "SANDBOX_IDLE_MS: must be a positive whole number",
    );
    expect(() => parseEnv({ SANDBOX_COMMAND_TIMEOUT_MS: "5s" })).toThrow("SANDBOX_COMMAND_TIMEOUT_MS");
    expect(() => parseEnv({ SANDBOX_SUPERVISOR_URL: "ftp://x" })).toThrow(
      "SANDBOX_SUPERVISOR_URL: must be an http(s) URL",
    );
    expect(() => parseEnv({ DESKTOP_ALLOWED_ROOTS: "relative/path" })).toThrow("DESKTOP_ALLOWED_ROOTS");
    expect(
      parseEnv({ DESKTOP_ALLOWED_ROOTS: "/srv/a, /srv/b/" }).sandbox.variables.DESKTOP_ALLOWED_ROOTS,
    ).toEqual(["/srv/a", "/srv/b"]);
  });
});
