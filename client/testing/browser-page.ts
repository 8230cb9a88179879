import { once } from "node:events";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "vite";

const ENTRY = fileURLToPath(new URL("../src/index.ts", import.meta.url));

/** A page whose module script puts the library's exports on `window.cubicle`. */
const PAGE = `<!doctype html><meta charset="utf-8"><title>client</title>
<script type="module">import * as cubicle from "/client.js"; window.cubicle = cubicle; document.title = "ready";</script>`;

/**
 * The library as a web app ships it: bundled for browsers by Vite (nothing of Node's in it), on a
 * page whose origin also forwards `/v1` to the api, as the dashboard's origin does (the api sends
 * no CORS headers, so a page calls it on its own origin).
 */
export async function servePageWithClient(apiUrl: string): Promise<{ url: string; close(): Promise<void> }> {
  const outDir = await mkdtemp(join(tmpdir(), "cubicle-client-bundle-"));
  await build({
    configFile: false,
    logLevel: "silent",
    build: {
      outDir,
      minify: false,
      lib: { entry: ENTRY, formats: ["es"], fileName: () => "client.js" },
    },
  });
  const bundle = await readFile(join(outDir, "client.js"));
  const api = new URL(apiUrl);
  const server = createServer((incoming, outgoing) => {
    if (incoming.url === "/") return outgoing.writeHead(200, { "content-type": "text/html" }).end(PAGE);
    if (incoming.url === "/client.js")
      return outgoing.writeHead(200, { "content-type": "text/javascript" }).end(bundle);
    if (!incoming.url?.startsWith("/v1/")) return outgoing.writeHead(404).end();
    const forwarded = request(
      {
        host: api.hostname,
        port: api.port,
        path: incoming.url,
        method: incoming.method,
        headers: incoming.headers,
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on("error", () => outgoing.destroy());
    incoming.pipe(forwarded);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await rm(outDir, { recursive: true, force: true });
    },
  };
}
