import type { Server } from "node:http";
import type { Readable } from "node:stream";
import { parseArgs } from "node:util";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { Cubicle } from "../cubicle.ts";
import { BotSession } from "./holder.ts";
import { serveHttp } from "./http.ts";
import { log } from "./log.ts";
import { createMcpServer } from "./server.ts";

export { BotSession } from "./holder.ts";
export { createMcpServer } from "./server.ts";

const USAGE = `Usage: cubicle mcp --bot <name or id> [--http [--port 8931] [--host 127.0.0.1]]

Serves the bot's computer to an AI agent as Model Context Protocol tools: over stdio by default,
or with --http as streamable HTTP at /mcp, where callers must present CUBICLE_API_KEY.
Reads CUBICLE_URL, CUBICLE_API_KEY and (optionally) CUBICLE_WORKSPACE.
`;

const OPTIONS = {
  bot: { type: "string" },
  http: { type: "boolean" },
  port: { type: "string", default: "8931" },
  host: { type: "string", default: "127.0.0.1" },
  help: { type: "boolean", short: "h" },
} as const;

/**
 * `cubicle mcp`: serves until the client goes (stdin ends, in stdio mode) or SIGINT / SIGTERM,
 * then ends the bot's session (outcome success). Resolves with the process's exit code.
 */
export async function runMcp(argv: string[]): Promise<number> {
  let flags: ReturnType<typeof parseArgs<{ args: string[]; options: typeof OPTIONS }>>["values"];
  try {
    flags = parseArgs({ args: argv, options: OPTIONS }).values;
  } catch (error) {
    return usageError((error as Error).message);
  }
  if (flags.help) {
    process.stderr.write(USAGE);
    return 0;
  }
  if (!flags.bot) return usageError("--bot is required.");
  const apiKey = process.env.CUBICLE_API_KEY;
  if (!apiKey) return usageError("Set CUBICLE_API_KEY to a Cubicle API key.");
  const port = Number(flags.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) return usageError(`Bad --port "${flags.port}".`);

  let cubicle: Cubicle;
  try {
    cubicle = Cubicle.fromEnv();
  } catch (error) {
    return usageError((error as Error).message);
  }
  const holder = new BotSession(cubicle, flags.bot);
  // listen before serving, so a signal during startup still ends what was opened
  const stop = stopRequested(flags.http ? undefined : process.stdin);

  let close: () => Promise<void>;
  if (flags.http) {
    let server: Server;
    try {
      server = await serveHttp({ holder, apiKey, host: flags.host, port });
    } catch (error) {
      log(`cannot listen on ${flags.host}:${port}: ${(error as Error).message}`);
      stop.cancel();
      return 1;
    }
    close = () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
  } else {
    const server = createMcpServer(holder);
    await server.connect(new StdioServerTransport());
    close = () => server.close();
  }

  log(`stopping: ${await stop.reason}`);
  await close();
  try {
    await holder.end();
    return 0;
  } catch (error) {
    log(`could not end the session: ${(error as Error).message}`);
    return 1;
  }
}

function usageError(message: string): number {
  process.stderr.write(`cubicle mcp: ${message}\n\n${USAGE}`);
  return 2;
}

/** The first of SIGINT, SIGTERM and the end of `stdin` (the MCP client went away). */
function stopRequested(stdin: Readable | undefined) {
  let cancel = () => {};
  const reason = new Promise<string>((resolve) => {
    const on = (why: string) => () => {
      cancel();
      resolve(why);
    };
    const onInt = on("SIGINT");
    const onTerm = on("SIGTERM");
    const onEnd = on("the client closed stdin");
    process.once("SIGINT", onInt);
    process.once("SIGTERM", onTerm);
    stdin?.once("end", onEnd);
    cancel = () => {
      process.off("SIGINT", onInt);
      process.off("SIGTERM", onTerm);
      stdin?.off("end", onEnd);
    };
  });
  return { reason, cancel: () => cancel() };
}
