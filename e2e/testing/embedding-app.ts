import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type ControlLease, Cubicle } from "@cubicle/client";

/**
 * A team's own web app that shows a bot's screen: a page with `<cubicle-screen>` (the viewer's
 * bundle) and a tiny backend that holds the API key and mints capabilities with @cubicle/client,
 * as README "Embedding a live screen" tells an integrator to. The page never sees the key.
 */
export interface EmbeddingApp {
  origin: string;
  /** Every token the backend handed its page, in order: what must never show up on the page. */
  readonly tokens: string[];
  /** Capability requests that came from the iframe embed (through the parent page). */
  readonly frameRequests: number;
  close(): Promise<void>;
}

export interface EmbeddingAppOptions {
  apiUrl: string;
  apiKey: string;
  workspaceId: string;
  computerId: string;
  /** Where the dashboard serves its embed page, for the iframe variant. */
  dashboardUrl: string;
  /** The built `cubicle-screen.js`. */
  bundle: string;
  /** Bind each capability to this app's origin (as a careful integrator does). */
  bindToOrigin: boolean;
}

const page = (body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>Team tool</title></head><body style="margin:0">${body}</body></html>`;

// The element fills 1280×800, the desktop's own size, so page and screen pixels coincide.
const SCREEN_PAGE = page(`
<cubicle-screen id="screen" label="Bot desktop" style="width:1280px;height:800px"></cubicle-screen>
<script type="module">
  import "/cubicle-screen.js";
  const screen = document.getElementById("screen");
  window.events = [];
  for (const name of ["state", "connect", "disconnect", "control-ended", "lease"])
    screen.addEventListener(name, (event) =>
      window.events.push({ name, detail: JSON.parse(JSON.stringify(event.detail ?? {})), at: Date.now() }));
  const mode = new URLSearchParams(location.search).get("mode") ?? "view";
  screen.getCapability = async () => {
    const response = await fetch("/capability", { method: "POST", body: JSON.stringify({ mode }) });
    if (!response.ok) throw new Error("the backend could not get a capability");
    return response.json();
  };
</script>`);

const FRAME_PAGE = (dashboardUrl: string, workspaceId: string) =>
  page(`
<iframe id="frame" title="Bot desktop" style="width:1280px;height:800px;border:0"></iframe>
<script type="module">
  import { connectScreenFrame } from "/cubicle-screen.js";
  window.frameEvents = [];
  const frame = document.getElementById("frame");
  connectScreenFrame(frame, {
    frameOrigin: ${JSON.stringify(dashboardUrl)},
    getCapability: async () => {
      const response = await fetch("/capability?from=frame", { method: "POST", body: JSON.stringify({ mode: "view" }) });
      if (!response.ok) throw new Error("the backend could not get a capability");
      return response.json();
    },
    onEvent: (name, detail) => window.frameEvents.push({ name, detail }),
  });
  frame.src = ${JSON.stringify(`${dashboardUrl}/embed/screen/${workspaceId}`)};
</script>`);

export async function startEmbeddingApp(options: EmbeddingAppOptions): Promise<
  EmbeddingApp & {
    takeControl(): Promise<void>;
    releaseControl(): Promise<void>;
  }
> {
  const cubicle = new Cubicle({
    url: options.apiUrl,
    apiKey: options.apiKey,
    workspaceId: options.workspaceId,
  });
  const bundle = readFileSync(options.bundle);
  const tokens: string[] = [];
  let frameRequests = 0;
  let lease: ControlLease | undefined;
  let origin = "";

  /**
   * The iframe's socket opens from the dashboard's page, not this app's: a capability for it is
   * not bound to this origin.
   */
  async function capability(mode: "view" | "control", forFrame: boolean) {
    const bound = options.bindToOrigin && !forFrame ? { origin } : {};
    const minted =
      mode === "control" && lease
        ? await lease.capability(bound)
        : await cubicle.screenCapability(options.computerId, { mode: "view", ...bound });
    tokens.push(minted.token);
    return minted;
  }

  const server: Server = createServer(async (request, response) => {
    const url = new URL(request.url ?? "/", origin);
    try {
      if (request.method === "GET" && url.pathname === "/") {
        response.writeHead(200, { "content-type": "text/html" }).end(SCREEN_PAGE);
      } else if (request.method === "GET" && url.pathname === "/frame") {
        response
          .writeHead(200, { "content-type": "text/html" })
          .end(FRAME_PAGE(options.dashboardUrl, options.workspaceId));
      } else if (request.method === "GET" && url.pathname === "/cubicle-screen.js") {
        response.writeHead(200, { "content-type": "text/javascript" }).end(bundle);
      } else if (request.method === "POST" && url.pathname === "/capability") {
        let body = "";
        for await (const chunk of request) body += chunk;
        const { mode } = JSON.parse(body) as { mode: "view" | "control" };
        const forFrame = url.searchParams.get("from") === "frame";
        if (forFrame) frameRequests++;
        const minted = await capability(mode, forFrame);
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(minted));
      } else {
        response.writeHead(404).end();
      }
    } catch (error) {
      response.writeHead(502, { "content-type": "text/plain" }).end(String(error));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    origin,
    tokens,
    get frameRequests() {
      return frameRequests;
    },
    async takeControl() {
      lease = await cubicle.takeControl(options.computerId);
    },
    async releaseControl() {
      await lease?.release();
      lease = undefined;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
