import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError } from "@cubicle/config";
import { describe, expect, it } from "vitest";
import { parseProxyConfig } from "./config.ts";

const key = "k".repeat(40);

describe("proxy configuration", () => {
  it("defaults to loopback port 3200, the local api and the local dashboard's origins", () => {
    const config = parseProxyConfig({ SCREEN_CAPABILITY_KEY: key, PROXY_PORT: " " });
    expect(config).toMatchObject({
      host: "127.0.0.1",
      port: 3200,
      apiUrl: "http://127.0.0.1:3100",
      allowedOrigins: ["http://127.0.0.1:3000", "http://localhost:3000"],
      previousCapabilityKeys: [],
    });
  });

  it("reads the capability key from SCREEN_CAPABILITY_KEY_FILE, and refuses it beside the variable", () => {
    const dir = mkdtempSync(join(tmpdir(), "cubicle-proxy-secret-"));
    try {
      const file = join(dir, "key");
      writeFileSync(file, `${key}\n`);
      expect(parseProxyConfig({ SCREEN_CAPABILITY_KEY_FILE: file }).capabilityKey).toBe(key);
      expect(() =>
        parseProxyConfig({ SCREEN_CAPABILITY_KEY_FILE: file, SCREEN_CAPABILITY_KEY: key }),
      ).toThrow("SCREEN_CAPABILITY_KEY and SCREEN_CAPABILITY_KEY_FILE are both set; keep one");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("buffers 32 MiB per recording unless PROXY_RECORDING_BUFFER_BYTES says otherwise, within bounds", () => {
    expect(parseProxyConfig({ SCREEN_CAPABILITY_KEY: key }).recordingBufferBytes).toBe(32 * 1024 * 1024);
    expect(
      parseProxyConfig({ SCREEN_CAPABILITY_KEY: key, PROXY_RECORDING_BUFFER_BYTES: "8388608" })
        .recordingBufferBytes,
    ).toBe(8 * 1024 * 1024);
    expect(() =>
      parseProxyConfig({ SCREEN_CAPABILITY_KEY: key, PROXY_RECORDING_BUFFER_BYTES: "1024" }),
    ).toThrow("PROXY_RECORDING_BUFFER_BYTES");
  });

  it("uploads a recording in parts of 60 s unless PROXY_RECORDING_PART_MS says otherwise, from 1 s to 240 s", () => {
    expect(parseProxyConfig({ SCREEN_CAPABILITY_KEY: key }).recordingPartMs).toBe(60_000);
    for (const ms of [1_000, 30_000, 240_000])
      expect(
        parseProxyConfig({ SCREEN_CAPABILITY_KEY: key, PROXY_RECORDING_PART_MS: String(ms) }).recordingPartMs,
      ).toBe(ms);
    for (const ms of ["999", "240001", "300000", "soon"])
      expect(() => parseProxyConfig({ SCREEN_CAPABILITY_KEY: key, PROXY_RECORDING_PART_MS: ms })).toThrow(
        "PROXY_RECORDING_PART_MS",
      );
  });

  it("reads rotation keys, origins and limits", () => {
    const config = parseProxyConfig({
      SCREEN_CAPABILITY_KEY: key,
      SCREEN_CAPABILITY_PREVIOUS_KEYS: `${"p".repeat(32)}, ${"q".repeat(32)}`,
      PROXY_ALLOWED_ORIGINS: "https://cubicle.example.com/",
      CUBICLE_API_URL: "http://api:3100/",
      PROXY_MAX_SOCKETS_PER_IP: "4",
      TRUSTED_PROXIES: "10.0.0.0/8, loopback",
    });
    expect(config.trustedProxies).toEqual(["10.0.0.0/8", "loopback"]);
    expect(config.previousCapabilityKeys).toHaveLength(2);
    expect(config.allowedOrigins).toEqual(["https://cubicle.example.com"]);
    expect(config.apiUrl).toBe("http://api:3100");
    expect(config.maxSocketsPerIp).toBe(4);
  });

  it("lists every problem at once, never echoing a secret", () => {
    let error: unknown;
    try {
      parseProxyConfig({
        SCREEN_CAPABILITY_KEY: "short-secret-value",
        PROXY_PORT: "70000",
        PROXY_ALLOWED_ORIGINS: "cubicle.example.com",
        CUBICLE_API_URL: "ftp://x",
        METRICS_TOKEN: "short-metrics-token",
        TRUSTED_PROXIES: "10.0.0.0/8, proxy.example.com",
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems).toHaveLength(6);
    expect(problems).toContain(
      'TRUSTED_PROXIES: "proxy.example.com" must be an IP address, a CIDR (10.0.0.0/8) or one of loopback, linklocal, uniquelocal',
    );
    expect(problems.join("\n")).not.toContain("short-secret-value");
    expect(problems.join("\n")).not.toContain("short-metrics-token");
    expect(() => parseProxyConfig({})).toThrow(/SCREEN_CAPABILITY_KEY is not set/);
  });
});
