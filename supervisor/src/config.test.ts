import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "./config.ts";

const TOKEN = "t".repeat(32);

function problemsOf(env: Record<string, string | undefined>): readonly string[] {
  try {
    parseConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error("expected parseConfig to throw");
}

describe("parseConfig", () => {
  it("uses loopback, port 7091 and the documented limits by default", () => {
    expect(parseConfig({ SANDBOX_SUPERVISOR_TOKEN: TOKEN, DATA_DIR: "/srv/cubicle" })).toEqual({
      host: "127.0.0.1",
      port: 7091,
      token: TOKEN,
      dataDir: "/srv/cubicle",
      homesDir: path.join("/srv/cubicle", "homes"),
      image: "cubicle-computer:latest",
      network: "cubicle-computers",
      screenHost: "127.0.0.1",
      memoryMb: 2048,
      cpus: 1,
      pidsLimit: 512,
      hostFirewall: "auto",
      // the host's, read at start where the firewall programs run
      dns: null,
      firewallContainer: null,
    });
  });

  it("reads every setting, treating blank values as unset", () => {
    const config = parseConfig({
      SANDBOX_SUPERVISOR_TOKEN: ` ${TOKEN} `,
      DATA_DIR: "relative/data",
      SUPERVISOR_HOST: "0.0.0.0",
      SUPERVISOR_PORT: "0",
      SUPERVISOR_MEMORY_MB: "4096",
      SUPERVISOR_CPUS: "1.5",
      SUPERVISOR_PIDS_LIMIT: "",
      SUPERVISOR_HOST_FIREWALL: "off",
      SUPERVISOR_SCREEN_HOST: "172.31.0.1",
      SUPERVISOR_DNS: "10.0.0.53, 9.9.9.9",
      SUPERVISOR_FIREWALL_CONTAINER: "cubicle-firewall-1",
    });
    expect(config).toMatchObject({
      dns: ["10.0.0.53", "9.9.9.9"],
      firewallContainer: "cubicle-firewall-1",
      screenHost: "172.31.0.1",
      host: "0.0.0.0",
      port: 0,
      token: TOKEN,
      dataDir: path.resolve("relative/data"),
      memoryMb: 4096,
      cpus: 1.5,
      pidsLimit: 512,
      hostFirewall: "off",
    });
  });

  it("refuses to start without a token, saying how to fix it", () => {
    const problems = problemsOf({ DATA_DIR: "/data" });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/SANDBOX_SUPERVISOR_TOKEN is not set.*at least 32/);
  });

  it("reads the token from SANDBOX_SUPERVISOR_TOKEN_FILE, and names a file it cannot read", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "cubicle-supervisor-secret-"));
    try {
      const file = path.join(dir, "token");
      writeFileSync(file, `${TOKEN}\n`);
      expect(parseConfig({ SANDBOX_SUPERVISOR_TOKEN_FILE: file, DATA_DIR: "/data" }).token).toBe(TOKEN);
      const missing = path.join(dir, "missing");
      expect(problemsOf({ SANDBOX_SUPERVISOR_TOKEN_FILE: missing, DATA_DIR: "/data" })).toEqual([
        `SANDBOX_SUPERVISOR_TOKEN_FILE: cannot read ${missing} (no such file)`,
        expect.stringMatching(/SANDBOX_SUPERVISOR_TOKEN is not set/),
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses a short token without echoing it", () => {
    const problems = problemsOf({ SANDBOX_SUPERVISOR_TOKEN: "short-secret", DATA_DIR: "/data" });
    expect(problems[0]).toMatch(/too short \(12 characters\)/);
    expect(problems.join("\n")).not.toContain("short-secret");
  });

  it("lists every problem at once", () => {
    const problems = problemsOf({
      SUPERVISOR_PORT: "70000",
      SUPERVISOR_CPUS: "lots",
      SUPERVISOR_MEMORY_MB: "12",
      SUPERVISOR_HOST_FIREWALL: "maybe",
      SUPERVISOR_SCREEN_HOST: "0.0.0.0",
      SUPERVISOR_DNS: "resolver.example",
    });
    expect(problems).toHaveLength(8);
    expect(problems.join("\n")).toMatch(/SUPERVISOR_DNS must be IPv4 addresses/);
    expect(problems.join("\n")).toMatch(/DATA_DIR is not set/);
    expect(problems.join("\n")).toMatch(/SUPERVISOR_PORT must be a whole number from 0 to 65535/);
    expect(problems.join("\n")).toMatch(/SUPERVISOR_CPUS/);
    expect(problems.join("\n")).toMatch(/SUPERVISOR_MEMORY_MB/);
    expect(problems.join("\n")).toMatch(/SUPERVISOR_HOST_FIREWALL/);
    expect(problems.join("\n")).toMatch(/SUPERVISOR_SCREEN_HOST must be one IPv4 address/);
  });
});
