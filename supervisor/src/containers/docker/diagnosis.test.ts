import type Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../config.ts";
import { departures } from "./diagnosis.ts";
import { containerSpec } from "./spec.ts";

const config = {
  ...parseConfig({ DATA_DIR: "/var/lib/cubicle", SANDBOX_SUPERVISOR_TOKEN: "t".repeat(40) }),
  dns: [],
};
const ref = { homeKey: "team-w1", computerId: "c1", workspaceId: "w1" };

/** A container as `docker inspect` shows one the supervisor made, with `change` applied to its HostConfig. */
function inspected(change: Record<string, unknown> = {}, user = "1000:1000"): Docker.ContainerInspectInfo {
  const spec = containerSpec(config, ref, "sha256:image", "/var/lib/cubicle/homes/team-w1");
  return {
    Config: { User: user },
    HostConfig: { ...spec.HostConfig, Privileged: false, ...change },
  } as unknown as Docker.ContainerInspectInfo;
}

describe("a computer's departures from the spec", () => {
  it("are none for a container made to the spec", () => {
    expect(departures(inspected(), config)).toEqual([]);
  });

  it("name each thing a container started another way gets wrong", () => {
    const found = departures(
      inspected(
        {
          Privileged: true,
          CapDrop: null,
          CapAdd: ["NET_ADMIN"],
          SecurityOpt: null,
          ShmSize: 64 * 2 ** 20,
          NetworkMode: "bridge",
          PortBindings: { "6080/tcp": [{ HostIp: "", HostPort: "" }] },
        },
        "",
      ),
      config,
    );
    expect(found).toEqual([
      "runs as root",
      "is privileged",
      "keeps Linux capabilities (they are not all dropped)",
      "adds capabilities NET_ADMIN",
      "may gain privileges (no no-new-privileges)",
      "runs under another seccomp profile than the computers' (computer-image/seccomp)",
      "has 64 MB of shared memory, not 256 MB",
      "is on network bridge, not cubicle-computers",
      "publishes 6080/tcp on every address, not only 127.0.0.1",
    ]);
  });

  it("count uid 0 by number as root too", () => {
    expect(departures(inspected({}, "0:0"), config)).toEqual(["runs as root"]);
  });
});
