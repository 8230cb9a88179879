import { text as readAll } from "node:stream/consumers";
import { Cubicle } from "../index.ts";
import { type Command, text, type Values } from "./command.ts";
import { type Env, saveConfig } from "./config.ts";
import { CliError, line, printJson } from "./output.ts";

/**
 * The key to log in with: `--api-key <key>` as given, `--api-key -` from stdin, else CUBICLE_API_KEY,
 * else stdin when it is not a terminal. A key on the command line shows in `ps` and shell history;
 * one piped in (`pass show cubicle | cubicle login --url …`) does not.
 */
async function apiKeyOf(values: Values, env: Env): Promise<string | undefined> {
  const given = text(values, "api-key");
  if (given !== undefined && given !== "-") return given;
  if (given === undefined && env.CUBICLE_API_KEY) return env.CUBICLE_API_KEY;
  if (given === "-" || !process.stdin.isTTY) return (await readAll(process.stdin)).trim() || undefined;
  return undefined;
}

export const loginCommands: Record<string, Command> = {
  login: {
    usage: "cubicle login --url <url> [--api-key -|<key>] [--workspace <id>]",
    summary: "Check an API key against the api and save it for later commands.",
    details: [
      "The key is read from stdin (`--api-key -`, or with no --api-key when stdin is not a terminal),",
      "else from CUBICLE_API_KEY. `--api-key <key>` works too, but puts the key in `ps` and your",
      "shell's history.",
      "Saved in $CUBICLE_CONFIG (or ~/.config/cubicle/config.json), readable only by you.",
      "CUBICLE_URL and CUBICLE_API_KEY, when either is set, are used instead of the file.",
    ],
    options: { url: { type: "string" }, "api-key": { type: "string" }, workspace: { type: "string" } },
    arity: [0, 0],
    async run(context, _args, values) {
      const url = text(values, "url");
      if (!url) throw new CliError("USAGE", "login needs --url.", this.usage);
      const apiKey = await apiKeyOf(values, context.env);
      if (!apiKey)
        throw new CliError(
          "USAGE",
          "login needs an API key: pipe it in (`--api-key -`), or set CUBICLE_API_KEY.",
          this.usage,
        );
      const workspace = text(values, "workspace");
      // a key that does not work is not saved: the api is asked which workspace it acts in, or,
      // for a workspace named here (taken as given, unasked), whether the key may list its bots
      const cubicle = new Cubicle({ url, apiKey, workspaceId: workspace });
      const workspaceId = await cubicle.workspaceId();
      if (workspace) await cubicle.listBots();
      const path = await saveConfig(context.env, {
        url: cubicle.url,
        apiKey,
        ...(workspace ? { workspace } : {}),
      });
      if (context.json) printJson({ url: cubicle.url, workspaceId, config: path });
      else line(`Logged in to ${cubicle.url} (workspace ${workspaceId}); saved in ${path}.`);
      return 0;
    },
  },
};
