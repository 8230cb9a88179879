import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { BotSession } from "./holder.ts";
import { registerTools } from "./tools.ts";

/** An MCP server giving its client the bot's computer; several may share one holder (HTTP mode). */
export function createMcpServer(holder: BotSession): McpServer {
  const server = new McpServer(
    { name: "cubicle", version: "0.1.0" },
    {
      instructions:
        `These tools drive the computer of the Cubicle bot "${holder.bot}": a Linux desktop of ` +
        "1280x800 pixels with a browser and a terminal. Look with computer_observe, act with computer_act " +
        "(coordinates are screenshot pixels), and use shell and the file tools for everything a command " +
        "does better than a mouse.",
    },
  );
  registerTools(server, holder);
  return server;
}
