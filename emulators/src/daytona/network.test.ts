import { describe, expect, it } from "vitest";
import { DaytonaHttpError } from "./errors.ts";
import { createdSettings, type NetworkSettings, outboundRulesOf, updatedSettings } from "./network.ts";

const refused = (attempt: () => unknown, message: string | RegExp) => {
  try {
    attempt();
  } catch (error) {
    expect(error).toBeInstanceOf(DaytonaHttpError);
    expect((error as DaytonaHttpError).status).toBe(400);
    expect((error as DaytonaHttpError).message).toMatch(message);
    return;
  }
  throw new Error("expected a 400");
};

const cidrs = (count: number) => Array.from({ length: count }, (_, i) => `203.0.113.${i}/32`).join(",");

describe("Daytona's network settings", () => {
  it("are open by default and keep what create asks for, leaving out empty lists", () => {
    expect(createdSettings({})).toEqual({ networkBlockAll: false });
    expect(createdSettings({ networkBlockAll: true, networkAllowList: "", domainAllowList: " " })).toEqual({
      networkBlockAll: true,
    });
    expect(
      createdSettings({ networkAllowList: "1.2.3.4/32,10.0.0.0/8", domainAllowList: "*.example.org" }),
    ).toEqual({
      networkBlockAll: false,
      networkAllowList: "1.2.3.4/32,10.0.0.0/8",
      domainAllowList: "*.example.org",
    });
  });

  it("refuses what Daytona refuses, in its words", () => {
    refused(() => createdSettings({ networkAllowList: "1.2.3.4" }), /Missing CIDR prefix length/);
    refused(() => createdSettings({ networkAllowList: "2001:db8::/32" }), /Must be a valid IPv4 address/);
    refused(() => createdSettings({ networkAllowList: "1.2.3.4/33" }), /Prefix must be between 0 and 32/);
    refused(() => createdSettings({ networkAllowList: cidrs(11) }), "cannot contain more than 10 networks");
    expect(createdSettings({ networkAllowList: cidrs(10) }).networkAllowList).toBe(cidrs(10));
    refused(() => createdSettings({ domainAllowList: "example.123" }), /alphabetic top-level domain/);
    refused(() => createdSettings({ domainAllowList: "exa mple.com" }), /Invalid domain/);
    const names = Array.from({ length: 11 }, (_, i) => `n${i}.example.com`).join(",");
    refused(() => createdSettings({ domainAllowList: names }), "cannot contain more than 10 domains");
    refused(() => createdSettings({ networkBlockAll: "yes" }), /boolean/);
    refused(() => createdSettings({ networkAllowList: ["1.2.3.4/32"] }), /must be a string/);
  });

  it("merge an update as Daytona does", () => {
    const listed: NetworkSettings = { networkBlockAll: false, networkAllowList: "1.2.3.4/32" };
    refused(() => updatedSettings(listed, {}), /At least one of/);
    // block-all clears the CIDR list; a non-empty list lifts block-all
    expect(updatedSettings(listed, { networkBlockAll: true })).toEqual({ networkBlockAll: true });
    expect(updatedSettings({ networkBlockAll: true }, { networkAllowList: "5.6.7.0/24" })).toEqual({
      networkBlockAll: false,
      networkAllowList: "5.6.7.0/24",
    });
    // block-all wins when both come together
    expect(updatedSettings(listed, { networkBlockAll: true, networkAllowList: "5.6.7.0/24" })).toEqual({
      networkBlockAll: true,
    });
    // block-all false alone opens and clears the list; "" clears a list; domains stand on their own
    expect(updatedSettings(listed, { networkBlockAll: false })).toEqual({ networkBlockAll: false });
    expect(updatedSettings(listed, { networkAllowList: "" })).toEqual({ networkBlockAll: false });
    const both = updatedSettings(listed, { domainAllowList: "example.com" });
    expect(both).toEqual({ ...listed, domainAllowList: "example.com" });
    expect(updatedSettings(both, { domainAllowList: "" })).toEqual(listed);
  });
});

describe("the firewall rules of Daytona's network settings", () => {
  const resolve = async (name: string) => (name === "example.com" ? ["93.184.215.14", "93.184.215.15"] : []);
  const resolvers = ["192.0.2.53"];
  const accept = (cidr: string) => ({ cidr, verdict: "accept" });

  it("are none when open, and drop everything on block-all, whatever the lists", async () => {
    expect(await outboundRulesOf({ networkBlockAll: false }, resolve, resolvers)).toBeNull();
    expect(
      await outboundRulesOf(
        { networkBlockAll: true, networkAllowList: "1.2.3.4/32", domainAllowList: "example.com" },
        resolve,
        resolvers,
      ),
    ).toEqual({ rules: [], otherwise: "reject" });
  });

  it("let through the listed CIDRs only", async () => {
    expect(
      await outboundRulesOf(
        { networkBlockAll: false, networkAllowList: "1.2.3.4/32, 10.0.0.0/8" },
        resolve,
        resolvers,
      ),
    ).toEqual({ rules: [accept("1.2.3.4/32"), accept("10.0.0.0/8")], otherwise: "reject" });
  });

  it("let through the listed domains' addresses now, a wildcard's apex, and the resolvers to look them up", async () => {
    expect(
      await outboundRulesOf(
        { networkBlockAll: false, domainAllowList: "*.example.com,unknown.example.org" },
        resolve,
        resolvers,
      ),
    ).toEqual({
      rules: [accept("93.184.215.14/32"), accept("93.184.215.15/32"), accept("192.0.2.53/32")],
      otherwise: "reject",
    });
  });
});
