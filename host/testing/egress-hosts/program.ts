/**
 * The stand-in hosts of the egress tests, run inside a network namespace the test made (index.ts
 * runs `ip netns exec <ns> node --import tsx program.ts <json>`): a TCP server per address that
 * greets with `hello <address>`, and a DNS server answering A records for the test's names
 * (NXDOMAIN otherwise) with a TTL of 1 s, so a resolver asks again soon. A line
 * `{"name": …, "address": …}` on stdin changes a record. Prints `ready` once everything listens.
 */
import { createSocket } from "node:dgram";
import { createServer } from "node:net";
import { createInterface } from "node:readline";
import * as dnsPacket from "dns-packet";

interface Hosts {
  tcp: { address: string; port: number }[];
  dns: { address: string; records: Record<string, string> };
}

const hosts = JSON.parse(process.argv[2] ?? "{}") as Hosts;

async function main(): Promise<void> {
  for (const { address, port } of hosts.tcp) {
    const server = createServer((socket) => {
      // a client that resets before the greeting is written (a probe that only checks the port
      // answers) is no fault of the host; unhandled, its error would end every stand-in at once
      socket.on("error", () => socket.destroy());
      socket.end(`hello ${address}\n`);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, address, resolve);
    });
  }
  const dns = createSocket("udp4");
  dns.on("message", (message, peer) => {
    let query: dnsPacket.DecodedPacket;
    try {
      query = dnsPacket.decode(message);
    } catch {
      // not a DNS message: a real server drops it and goes on
      return;
    }
    const question = query.questions?.[0];
    const address = question ? hosts.dns.records[question.name.toLowerCase()] : undefined;
    const answer = dnsPacket.encode({
      type: "response",
      id: query.id,
      flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | (address ? 0 : 3),
      questions: query.questions,
      answers:
        address && question?.type === "A"
          ? [{ type: "A", name: question.name, ttl: 1, class: "IN", data: address }]
          : [],
    });
    dns.send(answer, peer.port, peer.address);
  });
  await new Promise<void>((resolve) => dns.bind(53, hosts.dns.address, resolve));
  createInterface({ input: process.stdin }).on("line", (line) => {
    const { name, address } = JSON.parse(line) as { name: string; address: string };
    hosts.dns.records[name.toLowerCase()] = address;
  });
  console.log("ready");
}

void main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
