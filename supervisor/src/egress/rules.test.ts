import { describe, expect, it } from "vitest";
import { computerRules } from "./rules.ts";

const base = { resolvers: ["10.0.0.53"], subnet: "172.18.0.0/16", allowed: [] };
const rulesOf = (rules: Parameters<typeof computerRules>[2]) =>
  computerRules("CE-0123456789abcdef", "A", rules).lines.filter((line) =>
    line.startsWith("-A CE-0123456789abcdef-A "),
  );

describe("a computer's rules", () => {
  it("refuses the other computers first at every level; offline refuses all, DNS included", () => {
    for (const level of ["open", "default", "allowlist", "offline"] as const) {
      expect(rulesOf({ ...base, level })[0]).toBe(
        "-A CE-0123456789abcdef-A -d 172.18.0.0/16 -j CE-0123456789abcdef-AR",
      );
    }
    const offline = rulesOf({ ...base, level: "offline" });
    expect(offline.at(-1)).toBe("-A CE-0123456789abcdef-A -j CE-0123456789abcdef-AR");
    expect(offline.join("\n")).not.toContain("10.0.0.53");
  });

  it("default lets DNS reach the resolvers before it refuses private ranges, then returns", () => {
    const rules = rulesOf({ ...base, level: "default" });
    const dns = rules.findIndex((rule) => rule.includes("-d 10.0.0.53/32 -p udp"));
    const privateRange = rules.findIndex((rule) => rule.includes("-d 10.0.0.0/8 "));
    expect(dns).toBeGreaterThan(0);
    expect(privateRange).toBeGreaterThan(dns);
    expect(rules.at(-1)).toBe("-A CE-0123456789abcdef-A -j RETURN");
  });

  it("allowlist allows each block on its ports (tcp and udp, 15 to a rule) and refuses the rest", () => {
    const ports = Array.from({ length: 16 }, (_, i) => 1000 + i);
    const rules = rulesOf({
      ...base,
      level: "allowlist",
      allowed: [
        { cidr: "203.0.113.0/24", ports },
        { cidr: "198.51.100.7/32", ports: [] },
      ],
    });
    expect(rules.filter((rule) => rule.includes("-d 203.0.113.0/24"))).toHaveLength(4);
    expect(rules).toContain("-A CE-0123456789abcdef-A -d 198.51.100.7/32 -j RETURN");
    expect(rules.at(-1)).toBe("-A CE-0123456789abcdef-A -j CE-0123456789abcdef-AR");
  });
});
