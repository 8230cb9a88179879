/**
 * What `cubicle doctor` reads from the running api (GET /internal/doctor): only with a doctor
 * token; the provider the api chose, its credential's verdict, and the computers it has made.
 */
import { randomBytes } from "node:crypto";
import { EGRESS_LEVELS, type SandboxProvider } from "@cubicle/providers/contract";
import { fakeEgress } from "@cubicle/providers/testing";
import { CapabilityKeyring, mintServiceToken } from "@cubicle/proxy/capability";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createComputer } from "../testing/computers.ts";
import { expectStatus, startTestApi, type TestApi } from "../testing/harness.ts";
import { buildWorld, type World } from "../testing/world.ts";

const KEY = randomBytes(32).toString("base64url");
const keyring = new CapabilityKeyring({ current: KEY });

let t: TestApi;
let w: World;

beforeAll(async () => {
  t = await startTestApi({ SCREEN_CAPABILITY_KEY: KEY });
  w = await buildWorld(t, "doctor");
});
afterAll(() => t?.close());

const ask = (authorization?: string) =>
  fetch(`${t.api.url}/internal/doctor`, { headers: authorization ? { authorization } : {} });

describe("the doctor's view of the api", () => {
  it("answers a doctor token with the provider's choice, its credential's verdict and its computers", async () => {
    const computer = await createComputer(t, w.workspaceId);
    await t.database.db
      .updateTable("computers")
      .set({ provider_ref: "fake-machine" })
      .where("id", "=", computer.id)
      .execute();
    const response = await ask(`Bearer ${await mintServiceToken(keyring, "doctor")}`);
    expect(response.status).toBe(200);
    const view = await response.json();
    expect(view.provider).toEqual({
      configured: "fake",
      effective: "fake",
      computerHost: "isolated",
      reason: null,
    });
    expect(view.access).toBeNull();
    expect(view.computers).toContainEqual({
      id: computer.id,
      workspaceId: w.workspaceId,
      homeKey: computer.home_key,
      state: computer.state,
    });
  });

  it("names the stored egress policies the provider cannot enforce, as a provider switch leaves them", async () => {
    const computer = await createComputer(t, w.workspaceId, { bot: "Offline bot" });
    await t.database.db
      .updateTable("computers")
      .set({ egress_level: "offline", egress_allow: "[]" })
      .where("id", "=", computer.id)
      .execute();
    const token = `Bearer ${await mintServiceToken(keyring, "doctor")}`;
    const egressOf = async () => (await (await ask(token)).json()).egress;
    expect(await egressOf()).toEqual({ levels: [...EGRESS_LEVELS], unenforced: [] });
    const provider: SandboxProvider = await t.api.deps.sandbox.current();
    fakeEgress(provider).levels = ["open"];
    try {
      const { levels, unenforced } = await egressOf();
      expect(levels).toEqual(["open"]);
      // every workspace inherits `default` until set, and this computer has its own `offline`
      expect(unenforced).toContainEqual({
        of: expect.stringContaining(`(${w.workspaceId}), default`),
        reason: "The fake provider cannot enforce the default egress level; it enforces open.",
      });
      expect(unenforced).toContainEqual({
        of: `computer ${computer.id} of workspace Team doctor, offline`,
        reason: "The fake provider cannot enforce the offline egress level; it enforces open.",
      });
    } finally {
      fakeEgress(provider).levels = EGRESS_LEVELS;
    }
  });

  it("is an unknown path to anyone else, a proxy's token and the public's session included", async () => {
    for (const authorization of [
      undefined,
      `Bearer ${await mintServiceToken(keyring, "proxy")}`,
      `Bearer ${await mintServiceToken(new CapabilityKeyring({ current: "k".repeat(48) }), "doctor")}`,
    ]) {
      const response = await ask(authorization);
      expect(response.status, authorization ?? "no token").toBe(404);
      expect(await response.json()).toMatchObject({ code: "NOT_FOUND" });
    }
    expectStatus(await w.people.owner.get("/internal/doctor"), 404);
  });
});
