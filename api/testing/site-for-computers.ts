import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A small website with a cookie login, served by the test on the host and reachable from the
 * Docker computers (and nothing else): it listens on the computers network's gateway address,
 * and a firewall rule lets the computers' bridge reach exactly its port (the supervisor's rule
 * otherwise refuses every new connection from computers to the host).
 *
 *   GET /login  sets a persistent session cookie and sends the browser to /
 *   GET /       answers "signed in" or "signed out"; every request is recorded
 */
export interface LoginSite {
  /** e.g. http://172.18.0.1:41234 */
  url: string;
  cookieName: string;
  /** Each request: path, whether it carried the session the site gave out, and who asked. */
  requests: { path: string; signedIn: boolean; from: string }[];
  close(): Promise<void>;
}

export async function startLoginSite(network: string, bridge: string): Promise<LoginSite> {
  const gateway = gatewayOf(network);
  const cookieName = "cubicle_site_session";
  const session = randomBytes(16).toString("hex");
  const requests: LoginSite["requests"] = [];
  const server: Server = createServer((request, response) => {
    const path = new URL(request.url ?? "/", "http://site").pathname;
    const signedIn = (request.headers.cookie ?? "").split(/;\s*/).includes(`${cookieName}=${session}`);
    requests.push({ path, signedIn, from: request.socket.remoteAddress ?? "" });
    if (path === "/login") {
      response.writeHead(302, {
        location: "/",
        // persistent (Max-Age): a browser keeps it across restarts, as "remember me" logins do
        "set-cookie": `${cookieName}=${session}; Max-Age=86400; Path=/; HttpOnly; SameSite=Lax`,
      });
      response.end();
      return;
    }
    response.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
    response.end(`<!doctype html><title>${signedIn ? "signed in" : "signed out"}</title>`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, gateway, resolve);
  });
  const { port } = server.address() as AddressInfo;
  const rule = ["INPUT", "-i", bridge, "-p", "tcp", "--dport", String(port), "-j", "ACCEPT"];
  iptables(["-I", ...rule]);
  return {
    url: `http://${gateway}:${port}`,
    cookieName,
    requests,
    close: async () => {
      iptables(["-D", ...rule]);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function gatewayOf(network: string): string {
  const inspected = spawnSync(
    "docker",
    ["network", "inspect", network, "--format", "{{range .IPAM.Config}}{{.Gateway}} {{end}}"],
    { encoding: "utf8" },
  );
  const gateway = inspected.stdout.split(" ").find((address) => /^\d+\.\d+\.\d+\.\d+$/.test(address));
  if (inspected.status !== 0 || !gateway)
    throw new Error(`no IPv4 gateway for docker network ${network}: ${inspected.stderr}`);
  return gateway;
}

function iptables(args: string[]): void {
  const result = spawnSync("iptables", ["-w", "5", ...args], { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`iptables ${args.join(" ")} failed: ${result.stderr}`);
}
