import { ConfigError } from "@cubicle/config";
import type Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { checkDataDirMount, ownContainerId } from "./data-dir-mount.ts";

const ID = "a".repeat(64);
const IN_A_CONTAINER = `612 590 8:1 /var/lib/docker/containers/${ID}/hostname /etc/hostname rw,relatime - ext4 /dev/sda1 rw\n`;

/** The two engine answers the check reads: the supervisor's own container, and a named volume. */
function engine(mounts: object[], volumeOptions: Record<string, string> = {}): Docker {
  return {
    getContainer: (id: string) => ({
      inspect: async () => {
        expect(id).toBe(ID);
        return { Mounts: mounts };
      },
    }),
    getVolume: () => ({ inspect: async () => ({ Options: volumeOptions }) }),
  } as unknown as Docker;
}

const problemOf = (promise: Promise<void>) =>
  promise.then(
    () => "",
    (error: unknown) =>
      error instanceof ConfigError ? error.message : `not a ConfigError: ${String(error)}`,
  );

describe("the supervisor's DATA_DIR, when it runs in a container", () => {
  it("finds its own container from the hostname file Docker mounts, and nothing on a host", () => {
    expect(ownContainerId(IN_A_CONTAINER)).toBe(ID);
    expect(ownContainerId("22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n")).toBeNull();
    // another container's hostname file, seen from the host at some other mount point
    const elsewhere = `700 22 8:1 /var/lib/docker/containers/${ID}/hostname /run/netns/x/hostname rw - ext4 /dev/sda1 rw\n`;
    expect(ownContainerId(elsewhere)).toBeNull();
  });

  it("accepts the host folder mounted at the same path, or a bind volume of it", async () => {
    const same = [{ Type: "bind", Source: "/srv/cubicle", Destination: "/srv/cubicle" }];
    await expect(checkDataDirMount(engine(same), "/srv/cubicle", IN_A_CONTAINER)).resolves.toBeUndefined();
    await expect(
      checkDataDirMount(engine(same), "/srv/cubicle/data", IN_A_CONTAINER),
    ).resolves.toBeUndefined();
    const volume = [
      {
        Type: "volume",
        Name: "homes",
        Source: "/var/lib/docker/volumes/homes/_data",
        Destination: "/srv/cubicle",
      },
    ];
    const bound = engine(volume, { type: "none", o: "bind", device: "/srv/cubicle" });
    await expect(checkDataDirMount(bound, "/srv/cubicle", IN_A_CONTAINER)).resolves.toBeUndefined();
  });

  it("stops with the fix when DATA_DIR is another host path, a plain volume, or not mounted", async () => {
    const elsewhere = [{ Type: "bind", Source: "/home/ops/cubicle", Destination: "/data" }];
    expect(await problemOf(checkDataDirMount(engine(elsewhere), "/data", IN_A_CONTAINER))).toMatch(
      /^DATA_DIR \/data is the Docker host's \/home\/ops\/cubicle, .* \(for example `\/data:\/data`\)$/,
    );
    const volume = [
      { Type: "volume", Name: "homes", Source: "/var/lib/docker/volumes/homes/_data", Destination: "/data" },
    ];
    expect(await problemOf(checkDataDirMount(engine(volume), "/data", IN_A_CONTAINER))).toMatch(
      /is the Docker host's \/var\/lib\/docker\/volumes\/homes\/_data/,
    );
    expect(await problemOf(checkDataDirMount(engine([]), "/data", IN_A_CONTAINER))).toMatch(
      /^DATA_DIR \/data is not mounted from the Docker host/,
    );
  });

  it("checks nothing on a host", async () => {
    await expect(checkDataDirMount(engine([]), "/data", "")).resolves.toBeUndefined();
  });
});
