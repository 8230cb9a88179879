import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { Session } from "../session.ts";
import { actionBatch } from "./actions.ts";
import { type BotSession, describeError } from "./holder.ts";

/** What read_file returns at most: a file is read for an agent's context, which is not boundless. */
const READ_LIMIT = 256 * 1024;

const SESSION_NOTE =
  "The first tool call opens a session that holds the bot's computer for this server until it exits.";
const PATHS_NOTE =
  "Relative paths start in the bot's folder (where shell commands run too); absolute paths and paths " +
  "leading out of the computer's home are refused.";

const text = (body: string, isError = false): CallToolResult => ({
  content: [{ type: "text", text: body }],
  ...(isError ? { isError } : {}),
});

/** The bot's computer as tools, each run on the server's one session with the bot. */
export function registerTools(server: McpServer, holder: BotSession): void {
  // a tool's failure is the agent's to read (isError), not a protocol error. `signal` aborts when
  // the agent cancels the call or its HTTP caller goes: work that takes it stops on the computer too.
  const run =
    <A>(work: (session: Session, args: A, signal: AbortSignal) => Promise<CallToolResult>) =>
    (args: A, { signal }: { signal: AbortSignal }): Promise<CallToolResult> =>
      holder
        .use((session) => work(session, args, signal))
        .catch((error: unknown) => text(describeError(error, holder.bot), true));

  server.registerTool(
    "computer_observe",
    {
      title: "Screenshot",
      description:
        "Takes a screenshot of the bot's desktop: a 1280x800 PNG whose pixels are the coordinates " +
        "computer_act uses ((0,0) is the top-left corner), with the pointer's position and the focused " +
        `window's title. Observe after acting to see what changed. ${SESSION_NOTE}`,
      // no input, but a schema all the same: the SDK then calls it as the others, (args, extra)
      inputSchema: {},
      annotations: { readOnlyHint: true },
    },
    run(async (session) => {
      const shot = await session.observe();
      const window = shot.activeWindow === null ? "none" : JSON.stringify(shot.activeWindow);
      return {
        content: [
          { type: "image", data: Buffer.from(shot.png).toString("base64"), mimeType: "image/png" },
          {
            type: "text",
            text: `Screen ${shot.width}x${shot.height}, pointer at (${shot.cursor.x}, ${shot.cursor.y}), active window: ${window}.`,
          },
        ],
      };
    }),
  );

  server.registerTool(
    "computer_act",
    {
      title: "Mouse and keyboard",
      description:
        "Sends mouse and keyboard actions to the bot's 1280x800 desktop, in order, in one batch (up to " +
        "24). Coordinates are screenshot pixels from the top-left corner. A malformed batch runs none " +
        "of its actions; an action that fails stops the batch, and the answer says how many ran. " +
        `Take a screenshot afterwards to check the result. ${SESSION_NOTE}`,
      inputSchema: { actions: actionBatch.describe("The actions, run one after another.") },
    },
    run(async (session, { actions }) => {
      const result = await session.act(actions);
      const ran = `Ran ${result.completed} of ${result.total} actions.`;
      return result.error ? text(`${ran} ${result.error}`, true) : text(ran);
    }),
  );

  server.registerTool(
    "open_path",
    {
      title: "Open a file or folder on screen",
      description: `Opens a file (in the browser) or a folder (in a terminal started there) on the bot's desktop. ${PATHS_NOTE} ${SESSION_NOTE}`,
      inputSchema: { path: z.string().min(1).describe("The file or folder.") },
    },
    run(async (session, { path }) => {
      const started = await session.openPath(path);
      return text(`Opening ${path} on screen ${started.screen}; it appears in a moment.`);
    }),
  );

  server.registerTool(
    "launch_app",
    {
      title: "Launch an app",
      description: `Starts the browser (optionally at a URL) or a terminal on the bot's desktop. ${SESSION_NOTE}`,
      inputSchema: {
        app: z.enum(["browser", "terminal"]),
        url: z.url().optional().describe("For the browser: the page to open."),
      },
    },
    run(async (session, { app, url }) => {
      const started = await session.launch(app, url);
      return text(`Starting the ${app} on screen ${started.screen}; it appears in a moment.`);
    }),
  );

  server.registerTool(
    "shell",
    {
      title: "Run a shell command",
      description:
        "Runs a command with `sh -c` on the bot's computer, in the bot's folder, with DISPLAY set to " +
        "its desktop (so a GUI program started here appears on the screenshots), and returns its exit " +
        `code, stdout and stderr once it ends. A non-zero exit code is reported, not raised. ${SESSION_NOTE}`,
      inputSchema: {
        command: z.string().min(1),
        cwd: z.string().optional().describe(`Working folder. ${PATHS_NOTE}`),
        timeoutMs: z.number().int().min(1).max(3_600_000).optional().describe("Kill it after this long."),
      },
    },
    run(async (session, request, signal) => {
      const result = await session.run(request, { signal });
      const parts = [`exit code ${result.code}`];
      if (result.stdout) parts.push(`stdout:\n${result.stdout}`);
      if (result.stderr) parts.push(`stderr:\n${result.stderr}`);
      if (result.truncated) parts.push("(output truncated)");
      return text(parts.join("\n"));
    }),
  );

  server.registerTool(
    "read_file",
    {
      title: "Read a file",
      description: `Reads a text file on the bot's computer (the first ${READ_LIMIT / 1024} KiB). ${PATHS_NOTE} ${SESSION_NOTE}`,
      inputSchema: { path: z.string().min(1) },
      annotations: { readOnlyHint: true },
    },
    run(async (session, { path }) => {
      const { bytes, complete } = await head(await session.downloadFile(path), READ_LIMIT);
      let body: string;
      try {
        // streaming: a character cut in two at the limit is left out rather than taken for binary
        body = new TextDecoder("utf-8", { fatal: true }).decode(bytes, { stream: !complete });
      } catch {
        return text(`${path} is not a text file; use the shell to inspect it.`, true);
      }
      return text(complete ? body : `${body}\n(only the first ${READ_LIMIT} bytes of ${path})`);
    }),
  );

  server.registerTool(
    "write_file",
    {
      title: "Write a file",
      description: `Writes a text file on the bot's computer, replacing it if it exists and making missing folders. ${PATHS_NOTE} ${SESSION_NOTE}`,
      inputSchema: {
        path: z.string().min(1),
        content: z.string(),
        executable: z.boolean().optional().describe("Mark it executable (a script)."),
      },
    },
    run(async (session, { path, content, executable }) => {
      const bytes = new TextEncoder().encode(content);
      await session.writeFile(path, bytes, { executable: executable === true });
      return text(`Wrote ${bytes.byteLength} bytes to ${path}.`);
    }),
  );

  server.registerTool(
    "list_files",
    {
      title: "List a folder",
      description: `Lists a folder on the bot's computer (the bot's folder by default): the names in it, one a line, folders ending in /. ${PATHS_NOTE} ${SESSION_NOTE}`,
      inputSchema: { path: z.string().optional() },
      annotations: { readOnlyHint: true },
    },
    run(async (session, { path }) => {
      const list = await session.listFiles(path);
      const lines = list.items.map((entry) =>
        entry.type === "directory" ? `${entry.name}/` : `${entry.name}\t${entry.size} bytes`,
      );
      return text(lines.length > 0 ? lines.join("\n") : `${list.path || "The folder"} is empty.`);
    }),
  );
}

/** The first `limit` bytes of a stream (complete when that is all of it), then stops reading it. */
async function head(stream: ReadableStream<Uint8Array>, limit: number) {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = stream.getReader();
  while (size <= limit) {
    const { done, value } = await reader.read();
    if (done) return { bytes: Buffer.concat(chunks), complete: true };
    chunks.push(value);
    size += value.byteLength;
  }
  await reader.cancel();
  return { bytes: Buffer.concat(chunks).subarray(0, limit), complete: false };
}
