import type { Command } from "./command.ts";
import { currentSession } from "./session.ts";

/** A command that never ran (its `exit` code is a string, or an `error` came instead) exits 1. */
const NEVER_RAN = 1;

export const shellCommands: Record<string, Command> = {
  shell: {
    usage: "cubicle shell '<command>'",
    summary: "Run a command on the session's computer; its output streams, its exit code is the CLI's.",
    details: [
      "The command runs with sh -c in the bot's folder (several arguments are joined by spaces).",
      "Its stdout and stderr go to the CLI's as they come; Ctrl-C kills it (exit 130).",
      "--json: one JSON event per line ({type:stdout|stderr,data}, then {type:exit,code}).",
    ],
    arity: [1, Number.POSITIVE_INFINITY],
    async run(context, args) {
      const { session } = await currentSession(context);
      const abort = new AbortController();
      // Ctrl-C stops the command on the computer; the events then end with exit 130
      const interrupt = () => abort.abort();
      process.once("SIGINT", interrupt);
      let code = NEVER_RAN;
      try {
        for await (const event of session.shell(args.join(" "), { signal: abort.signal })) {
          if (context.json) process.stdout.write(`${JSON.stringify(event)}\n`);
          else if (event.type === "stdout") process.stdout.write(event.data);
          else if (event.type === "stderr") process.stderr.write(event.data);
          else if (event.type === "error") process.stderr.write(`error: ${event.message} (${event.code})\n`);
          else if (typeof event.code === "string")
            process.stderr.write(`error: ${event.message ?? "the command did not run"} (${event.code})\n`);
          if (event.type === "exit") code = typeof event.code === "number" ? event.code : NEVER_RAN;
        }
      } finally {
        process.off("SIGINT", interrupt);
      }
      return code;
    },
  },
};
