import { type ChildProcess, spawn } from "node:child_process";
import { randomInt } from "node:crypto";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { until } from "@cubicle/api/testing/until";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { must } from "../src/index.ts";
import { deployment, makeBot, memberClient, pngSize } from "../testing/index.ts";

/** A computer's first start (container, desktop, screens) is slow on a busy host. */
const SLOW = 240_000;
/** The `cubicle` CLI, as `npx cubicle` runs it. */
const CUBICLE = fileURLToPath(new URL("../bin/cubicle.mjs", import.meta.url));
const TOOLS = [
  "computer_act",
  "computer_observe",
  "launch_app",
  "list_files",
  "open_path",
  "read_file",
  "shell",
  "write_file",
];

/** What an agent's MCP host sets: the api's address and a member's API key, nothing else. */
const serverEnv = () => ({
  ...getDefaultEnvironment(),
  CUBICLE_URL: deployment().url,
  CUBICLE_API_KEY: deployment().memberKey,
});

const mcpClient = () => new Client({ name: "cubicle-test", version: "1.0.0" });

async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** The one text block of a tool's answer. */
function textOf(result: CallToolResult): string {
  const texts = result.content.filter((block) => block.type === "text");
  expect(texts).toHaveLength(1);
  return texts[0]?.type === "text" ? texts[0].text : "";
}

/** The bot's open sessions, as the api lists them. */
async function openSessions(botId: string) {
  const workspaceId = deployment().workspaceId;
  const list = await must(
    memberClient().api.GET("/v1/workspaces/{workspaceId}/sessions", {
      params: { path: { workspaceId }, query: { botId } },
    }),
  );
  return list.items;
}

/** `cubicle mcp --http` on a free port; resolves with its `/mcp` url once it listens. */
async function httpServer(bot: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [CUBICLE, "mcp", "--bot", bot, "--http", "--port", "0"], {
    env: serverEnv(),
    stdio: ["ignore", "inherit", "pipe"],
  });
  let logged = "";
  // read its log to the end (passing it on): a pipe closed early would fail the server's next line
  child.stderr?.on("data", (chunk) => {
    logged += String(chunk);
    process.stderr.write(chunk);
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr?.on("data", () => {
      const found = /at (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(logged)?.[1];
      if (found) resolve(found);
    });
    child.once("exit", () => reject(new Error(`the server exited without listening: ${logged}`)));
  });
  return { url, child };
}

describe("cubicle mcp: a bot's computer as an AI agent's tools", () => {
  it("over stdio lists the tools, screenshots, runs a command, and ends the session on exit", {
    timeout: SLOW,
  }, async () => {
    const bot = await makeBot("MCP");
    const client = mcpClient();
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CUBICLE, "mcp", "--bot", bot.name],
        env: serverEnv(),
      }),
    );
    expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual(TOOLS);
    expect(await openSessions(bot.id)).toEqual([]);

    const moved = await call(client, "computer_act", { actions: [{ type: "move", x: 321, y: 123 }] });
    expect(textOf(moved)).toBe("Ran 1 of 1 actions.");
    const shot = await call(client, "computer_observe");
    expect(shot.isError).toBeFalsy();
    const image = shot.content.find((block) => block.type === "image");
    expect(image).toMatchObject({ type: "image", mimeType: "image/png" });
    expect(pngSize(Buffer.from(image?.type === "image" ? image.data : "", "base64"))).toEqual({
      width: 1280,
      height: 800,
    });
    expect(textOf(shot)).toMatch(/^Screen 1280x800, pointer at \(321, 123\)/);

    const echo = await call(client, "shell", { command: "echo hi" });
    expect(echo.isError).toBeFalsy();
    expect(textOf(echo)).toBe("exit code 0\nstdout:\nhi\n");

    // a call the agent cancels stops its command on the computer, not only the wait for its answer
    const duration = `${randomInt(100, 200)}.${randomInt(1000, 10_000)}`;
    // the brackets keep the probe's own command line from matching
    const probe = `pgrep -f 'sleep ${duration.replace(".", "[.]")}' >/dev/null && echo running || echo gone`;
    const sleepIs = async (state: string) =>
      textOf(await call(client, "shell", { command: probe })).includes(state) || undefined;
    const cancel = new AbortController();
    const sleeping = client.callTool(
      { name: "shell", arguments: { command: `sleep ${duration}` } },
      undefined,
      { signal: cancel.signal },
    );
    await until("the command to run", () => sleepIs("running"));
    cancel.abort();
    await expect(sleeping).rejects.toThrow();
    await until("the cancelled command to be killed", () => sleepIs("gone"));

    await call(client, "write_file", { path: "mcp/note.txt", content: "from the agent" });
    expect(textOf(await call(client, "read_file", { path: "mcp/note.txt" }))).toBe("from the agent");
    expect(textOf(await call(client, "list_files", { path: "mcp" }))).toBe("note.txt\t14 bytes");

    // apps on the session's screen: a terminal, then a folder (which opens in a terminal there)
    const terminalsHere =
      'for p in $(pgrep -x xterm); do tr "\\0" "\\n" < /proc/$p/environ 2>/dev/null | grep -qx "DISPLAY=$DISPLAY" && echo $p; done | wc -l';
    const count = async () => textOf(await call(client, "shell", { command: terminalsHere }));
    const terminals = async (expected: string) => {
      let seen = "";
      await until("a new terminal on the bot's screen", async () => {
        seen = await count();
        return seen === expected ? true : undefined;
      }).catch(() => undefined);
      expect(seen).toBe(expected);
    };
    const before = Number(/stdout:\n(\d+)\n$/.exec(await count())?.[1]);
    const shown = (n: number) => `exit code 0\nstdout:\n${before + n}\n`;
    expect(textOf(await call(client, "launch_app", { app: "terminal" }))).toMatch(
      /^Starting the terminal on screen \d/,
    );
    await terminals(shown(1));
    expect(textOf(await call(client, "open_path", { path: "mcp" }))).toMatch(/^Opening mcp on screen \d/);
    await terminals(shown(2));

    const [held, ...others] = await openSessions(bot.id);
    expect(others).toEqual([]);
    expect(held).toMatchObject({ status: "open" });

    // the host closes stdin, as an agent's host does on exit: the server ends the session first
    await client.close();
    const path = { workspaceId: deployment().workspaceId, botId: bot.id, sessionId: held?.sessionId ?? "" };
    const ended = await must(
      memberClient().api.GET("/v1/workspaces/{workspaceId}/bots/{botId}/sessions/{sessionId}", {
        params: { path },
      }),
    );
    expect(ended).toMatchObject({ status: "ended", outcome: "success" });
  });

  it("over HTTP refuses a wrong key, serves the right one, and names the holder of a busy bot", {
    timeout: SLOW,
  }, async () => {
    const bot = await makeBot("MCP busy");
    const { url, child } = await httpServer(bot.name);
    try {
      const initialize = {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "1" } },
      };
      const wrongKeys: Record<string, string>[] = [
        { authorization: "Bearer not-the-key" },
        { "x-api-key": "" },
        {},
      ];
      for (const headers of wrongKeys) {
        const refused = await fetch(url, {
          method: "POST",
          headers: {
            ...headers,
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
          },
          body: JSON.stringify(initialize),
        });
        expect(refused.status).toBe(401);
        expect(await refused.json()).toMatchObject({
          error: { message: expect.stringMatching(/^Unauthorized/) },
        });
      }

      // the bot is taken (by the library, with the same key) before the agent's first tool call
      const taken = await memberClient().openSession(bot.name);
      try {
        const client = mcpClient();
        await client.connect(
          new StreamableHTTPClientTransport(new URL(url), {
            requestInit: { headers: { "x-api-key": deployment().memberKey } },
          }),
        );
        expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual(TOOLS);
        const busy = await call(client, "computer_observe");
        const [holder] = await openSessions(bot.id);
        expect(busy.isError).toBe(true);
        expect(textOf(busy)).toContain(`is busy: its computer is held by API key "${holder?.holder.name}"`);
        expect(textOf(busy)).toContain(`(session ${taken.id})`);
        await client.close();
      } finally {
        await taken.end();
      }
    } finally {
      child.kill("SIGTERM");
      const [code] = await once(child, "exit");
      expect(code).toBe(0);
    }
  });
});
