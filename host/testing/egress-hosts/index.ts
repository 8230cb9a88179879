import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";

/** The addresses the stand-in hosts answer on, all inside one namespace routed through this host. */
export interface EgressHosts {
  /** On a private subnet of its own (10.99.N.0/24), like a database on the LAN. */
  privateAddress: string;
  /** Standing in for the cloud metadata service. */
  metadataAddress: string;
  /** Two addresses standing in for the public internet (documentation ranges, never routed out). */
  publicAddresses: [string, string];
  /** The DNS server's address (private, like a LAN resolver), for SUPERVISOR_DNS. */
  dnsAddress: string;
  /** The TCP port every server listens on. */
  port: number;
  /** Names the DNS server answers, to their addresses. */
  records: Record<string, string>;
  /** Makes the DNS server answer `address` for `name` from now on. */
  setRecord(name: string, address: string): void;
  close(): Promise<void>;
}

const ip = (...args: string[]) => execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"] });

/**
 * A network namespace with a veth pair to this host, host routes to its stand-in addresses, and the
 * servers of program.ts in it. Names and the private subnet are random (tests may run side by
 * side); the metadata and public addresses are fixed, so `privateOnly` leaves them out (no server,
 * no route) for a test that may run beside one that uses them. close() removes the namespace, the
 * veth (its routes go with it) and the servers, and runs in a failing set-up too.
 */
export async function startEgressHosts(
  records: (hosts: { publicAddresses: [string, string] }) => Record<string, string>,
  options: { privateOnly?: boolean } = {},
): Promise<EgressHosts> {
  const id = randomBytes(3).toString("hex");
  const ns = `cbt-${id}`;
  const hostSide = `cbh${id}`;
  const nsSide = `cbn${id}`;
  const subnet = `10.99.${16 + (Number.parseInt(id, 16) % 200)}`;
  const hostsOf = {
    privateAddress: `${subnet}.10`,
    metadataAddress: "169.254.169.254",
    publicAddresses: ["203.0.113.10", "198.51.100.10"] as [string, string],
    dnsAddress: `${subnet}.53`,
    port: 8080,
  };
  const names = records(hostsOf);
  let server: ChildProcess | null = null;
  let closing = false;
  const close = async () => {
    closing = true;
    server?.kill("SIGKILL");
    for (const remove of [() => ip("link", "del", hostSide), () => ip("netns", "del", ns)]) {
      try {
        remove();
      } catch {
        // already gone
      }
    }
  };
  try {
    ip("netns", "add", ns);
    ip("link", "add", hostSide, "type", "veth", "peer", "name", nsSide);
    ip("link", "set", nsSide, "netns", ns);
    ip("addr", "add", `${subnet}.1/24`, "dev", hostSide);
    ip("link", "set", hostSide, "up");
    const inNs = (...args: string[]) => ip("netns", "exec", ns, "ip", ...args);
    inNs("link", "set", "lo", "up");
    inNs("addr", "add", `${subnet}.2/24`, "dev", nsSide);
    for (const address of [hostsOf.privateAddress, hostsOf.dnsAddress]) {
      inNs("addr", "add", `${address}/24`, "dev", nsSide);
    }
    const fixed = options.privateOnly ? [] : [hostsOf.metadataAddress, ...hostsOf.publicAddresses];
    for (const address of fixed) {
      inNs("addr", "add", `${address}/32`, "dev", nsSide);
      ip("route", "add", `${address}/32`, "via", `${subnet}.2`, "dev", hostSide);
    }
    inNs("link", "set", nsSide, "up");
    inNs("route", "add", "default", "via", `${subnet}.1`);
    const tcp = [hostsOf.privateAddress, ...fixed].map((address) => ({
      address,
      port: hostsOf.port,
    }));
    const script = fileURLToPath(new URL("./program.ts", import.meta.url));
    const child = spawn(
      "ip",
      [
        "netns",
        "exec",
        ns,
        process.execPath,
        "--import",
        "tsx",
        script,
        JSON.stringify({ tcp, dns: { address: hostsOf.dnsAddress, records: names } }),
      ],
      // tsx resolves from the host package's folder (the repository's node_modules)
      { stdio: ["pipe", "pipe", "pipe"], cwd: fileURLToPath(new URL("../..", import.meta.url)) },
    );
    server = child;
    await new Promise<void>((resolve, reject) => {
      let output = "";
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.split("\n").includes("ready")) resolve();
      };
      child.stdout?.on("data", onData);
      child.stderr?.on("data", onData);
      child.once("exit", (code) => {
        const exited = `the stand-in hosts exited (${code}): ${output}`;
        reject(new Error(exited));
        // later, every check of the test would fail as "unreachable": say why where it shows
        if (!closing) process.stderr.write(`${exited}\n`);
      });
    });
    const setRecord = (name: string, address: string) => {
      child.stdin?.write(`${JSON.stringify({ name, address })}\n`);
    };
    return { ...hostsOf, records: names, setRecord, close };
  } catch (error) {
    await close();
    throw error;
  }
}
