import type { Command } from "./command.ts";
import { printJson, table } from "./output.ts";

export const botCommands: Record<string, Command> = {
  bots: {
    usage: "cubicle bots",
    summary: "List the workspace's bots.",
    arity: [0, 0],
    async run(context) {
      const bots = await (await context.cubicle()).listBots();
      if (context.json) printJson(bots);
      else
        table(
          ["ID", "NAME", "MODE", "STATUS", "COMPUTER"],
          bots.map((bot) => [bot.id, bot.name, bot.computerMode, bot.status, bot.computerId ?? "-"]),
        );
      return 0;
    },
  },
};
