import type { Diagnosis } from "@cubicle/providers/supervisor-wire";
import { describe, expect, it } from "vitest";
import { type Check, providerChecks, supervisorChecks } from "./checks.ts";
import type { DoctorView } from "./routes.ts";

const view: DoctorView = {
  version: "0.1.0",
  provider: { configured: "docker", effective: "docker", computerHost: "isolated", reason: null },
  access: null,
  computers: [{ id: "c1", workspaceId: "w1", homeKey: "team-w1", state: "running" }],
  egress: { levels: ["open", "default", "allowlist", "offline"], unenforced: [] },
};

const healthy: Diagnosis = {
  health: {
    ok: true,
    docker: "ok",
    image: { ref: "cubicle-computer:latest", id: "sha256:1" },
    hostFirewall: "on",
    egress: "on",
  },
  hostFirewall: "on",
  imageVersion: { built: "abc", expected: "abc" },
  dataDirProblem: null,
  homes: ["team-w1"],
  computers: [
    {
      name: "cubicle-team-w1",
      homeKey: "team-w1",
      status: "running",
      imageCurrent: true,
      settingsCurrent: true,
      problems: [],
    },
  ],
  strangers: [],
};

const problems = (checks: Check[]) =>
  checks.filter((check) => check.outcome === "problem").map((check) => `${check.name}: ${check.detail}`);

describe("the doctor's reading", () => {
  it("finds nothing wrong in a healthy deployment", () => {
    expect(problems([...providerChecks(view), ...supervisorChecks(healthy, view.computers)])).toEqual([]);
  });

  it("names the computer host overriding SANDBOX_PROVIDER, and a refused key", () => {
    const overridden: DoctorView = {
      ...view,
      provider: {
        configured: "docker",
        effective: "desktop",
        computerHost: "this-host",
        reason: "the computer host setting is this-host",
      },
      access: { code: "PROVIDER_AUTH_FAILED", detail: "E2B refused the API key: check E2B_API_KEY" },
    };
    const found = providerChecks(overridden);
    expect(problems(found)).toEqual([
      "provider: SANDBOX_PROVIDER is docker, but new computers run on desktop: the computer host setting is this-host",
      "credential: desktop refused the api's call (PROVIDER_AUTH_FAILED): E2B refused the API key: check E2B_API_KEY",
    ]);
    expect(found[0]?.fix).toContain('"computerHost":"isolated"');
  });

  it("warns of egress policies the provider cannot enforce, naming a few and counting the rest", () => {
    const unenforced = Array.from({ length: 7 }, (_, i) => ({
      of: `workspace W${i} (w${i}), default`,
      reason:
        "The daytona provider cannot enforce the default egress level; it enforces open, allowlist, offline.",
    }));
    const found = providerChecks({
      ...view,
      provider: { ...view.provider, configured: "daytona", effective: "daytona" },
      egress: { levels: ["open", "allowlist", "offline"], unenforced },
    });
    const egress = found.find((check) => check.name === "egress policies");
    expect(egress?.outcome).toBe("warning");
    expect(egress?.detail).toMatch(/^7 egress policies are not enforced on daytona/);
    expect(egress?.detail).toContain("workspace W4 (w4), default: The daytona provider cannot enforce");
    expect(egress?.detail).not.toContain("W5");
    expect(egress?.detail).toMatch(/; and 2 more$/);
    expect(egress?.fix).toContain("open, allowlist, offline");
    expect(problems(found)).toEqual([]);
  });

  it("names each thing the supervisor saw wrong", () => {
    const found = supervisorChecks(
      {
        ...healthy,
        health: {
          ...healthy.health,
          ok: false,
          image: { ref: "cubicle-computer:latest", id: null },
          egress: "off",
          egressProblem:
            "container cubicle-firewall-1 cannot change the host's firewall; set SUPERVISOR_FIREWALL_CONTAINER",
        },
        hostFirewall: "off",
        dataDirProblem: "DATA_DIR /var/lib/cubicle is not mounted from the Docker host",
        homes: [],
        computers: [{ ...(healthy.computers[0] as Diagnosis["computers"][0]), problems: ["runs as root"] }],
        strangers: [{ name: "handmade", image: "cubicle-computer:latest" }],
      },
      view.computers,
    );
    expect(found.find((check) => check.name === "egress")?.fix).toBe(
      "container cubicle-firewall-1 cannot change the host's firewall; set SUPERVISOR_FIREWALL_CONTAINER",
    );
    expect(problems(found)).toEqual([
      "computer image: cubicle-computer:latest is not on the Docker engine: no computer can start",
      "host firewall: computers can open connections to this host's own services",
      "egress: the supervisor cannot enforce computers' egress policies: Docker computers do not start",
      "homes folder: DATA_DIR /var/lib/cubicle is not mounted from the Docker host",
      "computers: cubicle-team-w1 runs as root",
      "strangers: handmade (cubicle-computer:latest) was not made by the supervisor",
      "homes: computer c1 has no home team-w1",
    ]);
  });

  it("tells an image built from other sources, and only warns of computers made before it", () => {
    const found = supervisorChecks(
      {
        ...healthy,
        hostFirewall: "unknown",
        imageVersion: { built: "old", expected: "new" },
        computers: [{ ...(healthy.computers[0] as Diagnosis["computers"][0]), imageCurrent: false }],
      },
      view.computers,
    );
    expect(problems(found)).toEqual([
      "computer image: cubicle-computer:latest was built from other sources (version old; this release's is new)",
    ]);
    expect(found.filter((check) => check.outcome === "warning").map((check) => check.name)).toEqual([
      "host firewall",
      "computers",
    ]);
  });
});
