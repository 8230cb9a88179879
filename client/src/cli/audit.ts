import { type Command, text } from "./command.ts";
import { CliError, printJson, table } from "./output.ts";

export const auditCommands: Record<string, Command> = {
  audit: {
    usage: "cubicle audit [--limit <n>] [--action <action>]",
    summary: "Recent audit events of the workspace, newest first (admins and owners).",
    details: ["--action takes an exact action or a prefix such as session.*"],
    options: { limit: { type: "string" }, action: { type: "string" } },
    arity: [0, 0],
    async run(context, _args, values) {
      const limit = Number(text(values, "limit") ?? 20);
      if (!Number.isInteger(limit) || limit < 1)
        throw new CliError("USAGE", "--limit takes a positive whole number.", this.usage);
      const action = text(values, "action");
      const page = await (await context.cubicle()).auditEvents({ limit, ...(action ? { action } : {}) });
      if (context.json) printJson(page);
      else
        table(
          ["TIME", "ACTOR", "ACTION", "TARGET"],
          page.items.map((event) => [
            event.occurredAt,
            event.actor.label ?? event.actor.type,
            event.action,
            event.target ? `${event.target.type} ${event.target.id}` : "-",
          ]),
        );
      return 0;
    },
  },
};
