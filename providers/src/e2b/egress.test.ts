import { describe, expect, it } from "vitest";
import { ProviderError } from "../contract/index.ts";
import { e2bNetworkOf } from "./egress.ts";

const allowlist = (...hosts: string[]) => ({
  level: "allowlist" as const,
  allow: hosts.map((host) => ({ host, ports: [] })),
});

describe("E2B's network settings for an egress policy", () => {
  it("sets no rules for open and default, denies everything offline, allows the list and E2B's name server", () => {
    expect(e2bNetworkOf({ level: "open", allow: [] })).toEqual({ allowOut: [], denyOut: [] });
    expect(e2bNetworkOf({ level: "default", allow: [] })).toEqual({ allowOut: [], denyOut: [] });
    expect(e2bNetworkOf({ level: "offline", allow: [] })).toEqual({ allowOut: [], denyOut: ["0.0.0.0/0"] });
    expect(e2bNetworkOf(allowlist("203.0.113.10", "198.51.100.0/24", "example.com"))).toEqual({
      allowOut: ["203.0.113.10", "198.51.100.0/24", "example.com", "8.8.8.8"],
      denyOut: ["0.0.0.0/0"],
    });
  });

  it("refuses destinations E2B cannot let through: IPv6, and addresses inside its always-refused ranges", () => {
    for (const host of [
      "2001:db8::1",
      "2001:db8::/32",
      "10.1.2.3",
      "169.254.169.254",
      "172.20.0.0/16",
      "127.0.0.1",
    ]) {
      let refusal: unknown = null;
      try {
        e2bNetworkOf(allowlist(host));
      } catch (error) {
        refusal = error;
      }
      expect(refusal, host).toBeInstanceOf(ProviderError);
      expect(refusal).toMatchObject({ code: "EGRESS_UNSUPPORTED", message: expect.stringContaining(host) });
    }
    // a block wider than a refused range still reaches its public part
    expect(e2bNetworkOf(allowlist("0.0.0.0/0", "172.0.0.0/8")).allowOut).toEqual([
      "0.0.0.0/0",
      "172.0.0.0/8",
      "8.8.8.8",
    ]);
    expect(e2bNetworkOf(allowlist("172.32.0.1")).allowOut).toEqual(["172.32.0.1", "8.8.8.8"]);
  });
});
