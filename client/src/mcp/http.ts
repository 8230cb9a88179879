import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { BotSession } from "./holder.ts";
import { log } from "./log.ts";
import { createMcpServer } from "./server.ts";

export interface HttpOptions {
  holder: BotSession;
  /** The Cubicle API key the server itself uses: a caller must present the same one. */
  apiKey: string;
  host: string;
  port: number;
}

/**
 * Streamable HTTP at `/mcp`, stateless: each POST gets a fresh MCP server and transport, and all of
 * them share the process's one session with the bot. Resolves once listening.
 */
export async function serveHttp({ holder, apiKey, host, port }: HttpOptions): Promise<Server> {
  const server = createServer((request, response) => {
    handle(request, response, holder, apiKey).catch((error: unknown) => {
      log(`HTTP request failed: ${error instanceof Error ? error.message : String(error)}`);
      if (!response.headersSent) reply(response, 500, -32603, "Internal server error");
      else response.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  log(`serving MCP for bot "${holder.bot}" at http://${host}:${address.port}/mcp`);
  return server;
}

async function handle(
  request: IncomingMessage,
  response: ServerResponse,
  holder: BotSession,
  apiKey: string,
) {
  if (new URL(request.url ?? "/", "http://mcp").pathname !== "/mcp")
    return reply(response, 404, -32000, "Not found: the MCP endpoint is /mcp.");
  if (!presentsKey(request, apiKey)) {
    response.setHeader("www-authenticate", 'Bearer realm="cubicle"');
    return reply(
      response,
      401,
      -32001,
      "Unauthorized: send the Cubicle API key as a Bearer token or x-api-key.",
    );
  }
  // stateless: no stream to resume (GET) or MCP session to delete (DELETE)
  if (request.method !== "POST") return reply(response, 405, -32000, "Method not allowed: POST to /mcp.");
  const mcp = createMcpServer(holder);
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  response.on("close", () => {
    void transport.close();
    void mcp.close();
  });
  await mcp.connect(transport);
  await transport.handleRequest(request, response);
}

/** Whether the request carries the key; compared in constant time (digests, so lengths match too). */
function presentsKey(request: IncomingMessage, apiKey: string): boolean {
  const bearer = /^Bearer\s+(.+)$/i.exec(request.headers.authorization ?? "")?.[1];
  const header = request.headers["x-api-key"];
  const presented = bearer ?? (typeof header === "string" ? header : undefined);
  if (presented === undefined) return false;
  const digest = (value: string) => createHash("sha256").update(value).digest();
  return timingSafeEqual(digest(presented.trim()), digest(apiKey));
}

/** A JSON-RPC error body, the shape an MCP client reads from a failed HTTP answer. */
function reply(response: ServerResponse, status: number, code: number, message: string): void {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}
