import { parseArgs } from "node:util";
import { auditCommands } from "./audit.ts";
import { botCommands } from "./bots.ts";
import { checkpointCommands } from "./checkpoints.ts";
import { type Command, context } from "./command.ts";
import { computerCommands } from "./computers.ts";
import type { Env } from "./config.ts";
import { fileCommands } from "./files.ts";
import { loginCommands } from "./login.ts";
import { mcp } from "./mcp.ts";
import { observeCommands } from "./observe.ts";
import { CliError, EXIT, line, reportError } from "./output.ts";
import { sessionCommands } from "./session.ts";
import { shellCommands } from "./shell.ts";

/** Every command by its words: "files get" is the group `files`' `get`. */
const COMMANDS: Record<string, Command> = {
  ...loginCommands,
  ...botCommands,
  ...computerCommands,
  ...sessionCommands,
  ...shellCommands,
  ...fileCommands,
  ...observeCommands,
  ...checkpointCommands,
  ...auditCommands,
};

/** Options every command takes. */
const GLOBAL = { json: { type: "boolean" }, help: { type: "boolean", short: "h" } } as const;

const OVERVIEW = [
  "cubicle: drive Cubicle's bots and computers from a terminal or a script.",
  "",
  "Commands:",
  ...Object.values(COMMANDS).map((command) => `  ${command.usage}\n      ${command.summary}`),
  "  cubicle mcp --bot <bot> [--http [--port <port>] [--host <host>]]",
  "      Serve the bot's computer to an AI agent as MCP tools (see cubicle mcp --help).",
  "",
  "Every command takes --json (machine-readable output) and --help.",
  "Credentials: CUBICLE_URL and CUBICLE_API_KEY (optional CUBICLE_WORKSPACE), or `cubicle login`.",
  "Exit codes: 0 done, 1 the api refused (or could not be reached, or a local file failed), 2 bad",
  "usage, no credentials or no open session; `shell` exits with its command's code (130 when",
  "interrupted, 1 when it never ran).",
].join("\n");

/** The command the words name, and how many words its name took. */
function find(words: string[]): { command: Command; length: number } | undefined {
  const [first = "", second = ""] = words;
  const pair = COMMANDS[`${first} ${second}`];
  if (pair) return { command: pair, length: 2 };
  const single = COMMANDS[first];
  return single ? { command: single, length: 1 } : undefined;
}

function help(command: Command): string {
  return [`usage: ${command.usage}`, "", command.summary, ...(command.details ?? [])].join("\n");
}

/** Runs the CLI on its arguments; the result is its exit code. */
export async function main(argv: string[], env: Env = process.env): Promise<number> {
  // a first, lenient pass only to find the command's words: its own options are known after
  const { tokens, values } = parseArgs({ args: argv, strict: false, allowPositionals: true, tokens: true });
  const json = values.json === true;
  const words = tokens.flatMap((token) => (token.kind === "positional" ? [token.value] : []));
  const wantsHelp = words[0] === "help" || values.help === true;
  const named = words[0] === "help" ? words.slice(1) : words;
  try {
    // the MCP server parses its own options and reports its own errors, once it has credentials
    if (argv[0] === "mcp") return await mcp(argv.slice(1), env);
    const found = find(named);
    if (!found) {
      if (wantsHelp && named.length === 0) {
        line(OVERVIEW);
        return EXIT.ok;
      }
      const group = Object.values(COMMANDS).filter((command) =>
        command.usage.startsWith(`cubicle ${named[0]} `),
      );
      const message =
        named.length === 0
          ? "no command given."
          : named.length === 1 && group.length > 0
            ? `"${named[0]}" takes a subcommand.`
            : `unknown command "${named.join(" ")}".`;
      const usage =
        group.length > 0 ? group.map((command) => `usage: ${command.usage}`).join("\n") : OVERVIEW;
      throw new CliError("USAGE", message, usage);
    }
    const { command, length } = found;
    if (wantsHelp) {
      line(help(command));
      return EXIT.ok;
    }
    let parsed: ReturnType<typeof parseArgs>;
    try {
      parsed = parseArgs({
        args: argv,
        options: { ...GLOBAL, ...command.options },
        allowPositionals: true,
        strict: true,
      });
    } catch (error) {
      throw new CliError("USAGE", (error as Error).message, help(command));
    }
    const args = parsed.positionals.slice(length);
    const [least, most] = command.arity;
    if (args.length < least || args.length > most)
      throw new CliError("USAGE", `wrong number of arguments.`, help(command));
    return await command.run(context(env, json), args, parsed.values);
  } catch (error) {
    return reportError(error, json);
  }
}
