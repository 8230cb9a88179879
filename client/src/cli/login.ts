import { Cubicle } from "../index.ts";
import { type Command, text } from "./command.ts";
import { saveConfig } from "./config.ts";
import { CliError, line, printJson } from "./output.ts";

export const loginCommands: Record<string, Command> = {
  login: {
    usage: "cubicle login --url <url> --api-key <key> [--workspace <id>]",
    summary: "Check an API key against the api and save it for later commands.",
    details: [
      "Saved in $CUBICLE_CONFIG (or ~/.config/cubicle/config.json), readable only by you.",
      "CUBICLE_URL, CUBICLE_API_KEY and CUBICLE_WORKSPACE, when set, win over the file.",
    ],
    options: { url: { type: "string" }, "api-key": { type: "string" }, workspace: { type: "string" } },
    arity: [0, 0],
    async run(context, _args, values) {
      const url = text(values, "url");
      const apiKey = text(values, "api-key");
      const workspace = text(values, "workspace");
      if (!url || !apiKey) throw new CliError("USAGE", "login needs --url and --api-key.", this.usage);
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
