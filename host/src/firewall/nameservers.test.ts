import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { hostNameservers } from "./nameservers.ts";

describe("hostNameservers", () => {
  it("gives computers the host's name servers, leaving out loopback ones they cannot reach", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "cubicle-host-resolv-"));
    try {
      const file = path.join(dir, "resolv.conf");
      writeFileSync(
        file,
        "# comment\nnameserver 127.0.0.53\nnameserver 10.1.2.3\n nameserver ::1\nnameserver 9.9.9.9\n",
      );
      const loopbackOnly = path.join(dir, "stub-resolv.conf");
      writeFileSync(loopbackOnly, "nameserver 127.0.0.53\n");
      expect(hostNameservers([file])).toEqual(["10.1.2.3", "9.9.9.9"]);
      // behind systemd-resolved: its upstream servers
      expect(hostNameservers([loopbackOnly, file])).toEqual(["10.1.2.3", "9.9.9.9"]);
      expect(hostNameservers([loopbackOnly, path.join(dir, "missing")])).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
