// The dashboard's server: Next.js (the production build in .next) behind a plain Node HTTP server,
// for one reason. Forwarding /v1, /api and /health to the api (src/forwarding/forward.ts), the
// dashboard must tell the api which address the browser connected from, and a Next.js route
// handler cannot learn that: Request has no peer address, and Next fills X-Forwarded-For from
// the socket only when the browser did not send one (so the browser chooses it). Here, where the
// connection is accepted, the address is known; it is handed to the route handlers in an
// AsyncLocalStorage (they run in this process), never in a header a browser could also send.
//
// Usage: node web/server.mjs --port 3000 --hostname 127.0.0.1
// TRUSTED_PROXIES (addresses, CIDRs, or loopback / linklocal / uniquelocal): proxies in front
// of the dashboard, such as a TLS terminator, whose X-Forwarded-For is believed; unset, none.
import { AsyncLocalStorage } from "node:async_hooks";
import { createServer } from "node:http";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import next from "next";
import proxyAddr from "proxy-addr";

// Read by src/forwarding/client-address.ts; a global because Next bundles that module apart.
const CLIENT_ADDRESS = Symbol.for("cubicle.web.clientAddress");

const { values } = parseArgs({
  options: { port: { type: "string", short: "p" }, hostname: { type: "string", short: "H" } },
});
const port = Number(values.port ?? "3000");
const hostname = values.hostname ?? "127.0.0.1";

let trusted;
try {
  const proxies = (process.env.TRUSTED_PROXIES ?? "")
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
  trusted = proxyAddr.compile(proxies);
} catch (error) {
  console.error(`Cubicle dashboard cannot start; fix its configuration:\nTRUSTED_PROXIES: ${error.message}`);
  process.exit(78);
}

const clientAddress = new AsyncLocalStorage();
globalThis[CLIENT_ADDRESS] = clientAddress;

const app = next({ dev: false, dir: dirname(fileURLToPath(import.meta.url)), hostname, port });
await app.prepare();
const handle = app.getRequestHandler();

const server = createServer((request, response) => {
  clientAddress.run(proxyAddr(request, trusted), () => handle(request, response));
});
server.listen(port, hostname, () => console.log(`cubicle dashboard listening on http://${hostname}:${port}`));
for (const signal of ["SIGINT", "SIGTERM"])
  process.once(signal, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
