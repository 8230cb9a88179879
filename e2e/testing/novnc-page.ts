import { createReadStream, existsSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { dirname, extname, join, normalize, sep } from "node:path";

const TYPES: Record<string, string> = {
  ".js": "text/javascript",
  ".html": "text/html",
  ".json": "application/json",
};

// The page a dashboard would embed: noVNC connects to the proxy with the capability offered as a
// WebSocket subprotocol, never in the URL.
const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>screen</title></head>
<body style="margin:0"><div id="screen" style="width:1280px;height:800px"></div>
<script type="module">
import RFB from "/novnc/core/rfb.js";
window.screenEvents = [];
window.openScreen = (url, protocol, token, viewOnly) => {
  const rfb = new RFB(document.getElementById("screen"), url, { wsProtocols: [protocol, token] });
  rfb.viewOnly = viewOnly;
  rfb.scaleViewport = false;
  for (const name of ["connect", "disconnect", "securityfailure"])
    rfb.addEventListener(name, (event) => window.screenEvents.push({ name, clean: event.detail?.clean, at: Date.now() }));
  window.rfb = rfb;
};
</script></body></html>`;

export interface NovncPage {
  /** The origin the page is served from; the proxy must allow it. */
  origin: string;
  close(): Promise<void>;
}

/** Serves the test page and the @novnc/novnc package it imports, on loopback. */
export async function serveNovncPage(): Promise<NovncPage> {
  const novncRoot = dirname(createRequire(import.meta.url).resolve("@novnc/novnc"));
  const packageRoot = novncRoot.endsWith(`${sep}core`) ? dirname(novncRoot) : novncRoot;
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? "/", "http://page").pathname;
    if (path === "/") {
      response.writeHead(200, { "content-type": "text/html" }).end(PAGE);
      return;
    }
    const file = normalize(join(packageRoot, path.replace(/^\/novnc\//, "")));
    if (
      !path.startsWith("/novnc/") ||
      !file.startsWith(packageRoot + sep) ||
      !existsSync(file) ||
      !statSync(file).isFile()
    ) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" });
    createReadStream(file).pipe(response);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
