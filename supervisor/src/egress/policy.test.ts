import { MAX_EGRESS_DESTINATIONS } from "@cubicle/providers/contract";
import { describe, expect, it } from "vitest";
import { EgressPolicySchema, isPublicIPv4, targetOf, unenforceable } from "./policy.ts";

const issues = (input: unknown) => {
  const parsed = EgressPolicySchema.safeParse(input);
  return parsed.success
    ? []
    : parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
};

describe("egress policies", () => {
  it("takes names, addresses and CIDR blocks with ports", () => {
    expect(
      EgressPolicySchema.parse({
        level: "allowlist",
        allow: [
          { host: "api.example.com", ports: [443] },
          { host: "203.0.113.0/24", ports: [] },
        ],
      }).allow,
    ).toHaveLength(2);
    expect(targetOf("API.Example.com")).toEqual({ kind: "name", name: "api.example.com" });
    expect(targetOf("198.51.100.7")).toEqual({ kind: "cidr", cidr: "198.51.100.7/32" });
    expect(EgressPolicySchema.parse({ level: "offline" })).toEqual({ level: "offline", allow: [] });
  });

  it("names every problem: level, host, CIDR, port, count, and allow without allowlist", () => {
    expect(issues({ level: "closed", allow: [] })[0]).toMatch(/^level: /);
    expect(issues({ level: "allowlist", allow: [{ host: "10.0.0.0/33", ports: [] }] })).toEqual([
      "allow.0.host: a CIDR block: an IP address, a slash and a prefix length (10.1.0.0/16)",
    ]);
    expect(issues({ level: "allowlist", allow: [{ host: "bad_name!", ports: [] }] })[0]).toMatch(
      /allow.0.host: a DNS name/,
    );
    expect(issues({ level: "allowlist", allow: [{ host: "example.com", ports: [0, 70000] }] })).toHaveLength(
      2,
    );
    expect(issues({ level: "allowlist", allow: [{ host: "example.com", ports: [80, 80] }] })[0]).toMatch(
      /each port once/,
    );
    const many = Array.from({ length: MAX_EGRESS_DESTINATIONS + 1 }, () => ({
      host: "example.com",
      ports: [],
    }));
    expect(issues({ level: "allowlist", allow: many })[0]).toMatch(/^allow: at most 64/);
    expect(issues({ level: "default", allow: [{ host: "example.com", ports: [] }] })).toEqual([
      "allow: only an allowlist policy lists destinations (level is default)",
    ]);
  });

  it("takes an IPv6 destination as well formed, and says Docker computers cannot carry it", () => {
    const policy = EgressPolicySchema.parse({
      level: "allowlist",
      allow: [{ host: "2001:db8::/32", ports: [] }],
    });
    expect(unenforceable(policy)).toMatch(/IPv4 only/);
    expect(unenforceable({ level: "allowlist", allow: [{ host: "203.0.113.0/24", ports: [] }] })).toBeNull();
  });

  it("counts private, link-local, loopback, multicast and reserved addresses as not public", () => {
    for (const address of [
      "10.1.2.3",
      "172.20.0.1",
      "192.168.1.1",
      "100.64.0.1",
      "169.254.169.254",
      "127.0.0.1",
      "224.0.0.1",
      "255.255.255.255",
      "0.0.0.0",
    ]) {
      expect(isPublicIPv4(address), address).toBe(false);
    }
    expect(isPublicIPv4("203.0.113.10")).toBe(true);
    expect(isPublicIPv4("172.32.0.1")).toBe(true);
  });
});
