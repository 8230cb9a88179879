import { describe, expect, it } from "vitest";
import { type EgressDestination, ProviderError } from "../contract/index.ts";
import { requireEnforceable } from "../kernel/egress.ts";
import { DAYTONA_EGRESS, DAYTONA_EGRESS_ALLOWLIST, heldSettings, networkSettingsOf } from "./egress.ts";

const allowlist = (allow: EgressDestination[]) => ({ level: "allowlist" as const, allow });
const host = (name: string): EgressDestination => ({ host: name, ports: [] });

function unsupported(attempt: () => unknown, message: string | RegExp): void {
  try {
    attempt();
  } catch (error) {
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).code).toBe("EGRESS_UNSUPPORTED");
    expect((error as ProviderError).message).toMatch(message);
    return;
  }
  throw new Error("expected EGRESS_UNSUPPORTED");
}

describe("egress policies as Daytona's network settings", () => {
  it("open clears everything, offline blocks everything, and every field is always sent", () => {
    expect(networkSettingsOf({ level: "open", allow: [] })).toEqual({
      networkBlockAll: false,
      networkAllowList: "",
      domainAllowList: "",
    });
    expect(networkSettingsOf({ level: "offline", allow: [] })).toEqual({
      networkBlockAll: true,
      networkAllowList: "",
      domainAllowList: "",
    });
  });

  it("an allowlist puts addresses (as /32) and CIDR blocks in one list and names in the other", () => {
    expect(
      networkSettingsOf(allowlist([host("203.0.113.10"), host("198.51.100.0/24"), host("api.example.com")])),
    ).toEqual({
      networkBlockAll: false,
      networkAllowList: "203.0.113.10/32,198.51.100.0/24",
      domainAllowList: "api.example.com",
    });
  });

  it("an empty allowlist blocks everything: Daytona reads two empty lists as open", () => {
    expect(networkSettingsOf(allowlist([])).networkBlockAll).toBe(true);
  });

  it("refuses what Daytona cannot hold, saying why", () => {
    unsupported(
      () => networkSettingsOf({ level: "default", allow: [] }),
      /no deny list.*open, allowlist, offline/,
    );
    unsupported(() => networkSettingsOf(allowlist([host("2001:db8::1")])), /IPv4 allow lists only/);
    unsupported(() => networkSettingsOf(allowlist([host("2001:db8::/32")])), /IPv6/);
    unsupported(
      () => networkSettingsOf(allowlist([{ host: "203.0.113.10", ports: [443] }])),
      /without ports/,
    );
    unsupported(
      () => networkSettingsOf(allowlist([host("example.xn--p1ai")])),
      /alphabetic top-level domain/,
    );
    const many = (make: (i: number) => string) =>
      allowlist(Array.from({ length: 11 }, (_, i) => host(make(i))));
    unsupported(
      () => networkSettingsOf(many((i) => `203.0.113.${i}`)),
      /at most 10 IPv4 addresses or CIDR blocks/,
    );
    unsupported(() => networkSettingsOf(many((i) => `n${i}.example.com`)), /at most 10 domain names/);
  });

  it("the provider's capabilities refuse default, ports and more than 10 destinations before anything is sent", () => {
    const capabilities = {
      graphical: true,
      maxScreens: 1,
      pty: false,
      egress: DAYTONA_EGRESS,
      egressAllowlist: DAYTONA_EGRESS_ALLOWLIST,
    };
    const refusedBy = (policy: Parameters<typeof requireEnforceable>[1]) =>
      unsupported(() => requireEnforceable(capabilities, policy), /.+/);
    refusedBy({ level: "default", allow: [] });
    refusedBy(allowlist([{ host: "203.0.113.10", ports: [443] }]));
    refusedBy(allowlist(Array.from({ length: 11 }, (_, i) => host(`n${i}.example.com`))));
    expect(() => requireEnforceable(capabilities, allowlist([host("203.0.113.10")]))).not.toThrow();
  });

  it("a sandbox's held settings are given again unless it is open", () => {
    expect(heldSettings({ networkBlockAll: false })).toBeNull();
    expect(heldSettings({ networkBlockAll: true })).toEqual({
      networkBlockAll: true,
      networkAllowList: "",
      domainAllowList: "",
    });
    expect(heldSettings({ networkBlockAll: false, domainAllowList: "example.com" })).toEqual({
      networkBlockAll: false,
      networkAllowList: "",
      domainAllowList: "example.com",
    });
  });
});
