import type { Computer } from "../index.ts";
import type { Command, Context } from "./command.ts";
import { line, printJson, progress, table } from "./output.ts";

/** Start and stop wait for the machine (a first start builds a desktop): progress on stderr. */
function change(verb: "start" | "stop", doing: string, done: string): Command {
  return {
    usage: `cubicle computers ${verb} <computer>`,
    summary: `${verb === "start" ? "Start" : "Stop"} a computer and wait until it is ${done}.`,
    arity: [1, 1],
    async run(context: Context, [id = ""]) {
      const cubicle = await context.cubicle();
      const computer = await progress(`${doing} computer ${id}`, () =>
        verb === "start" ? cubicle.startComputer(id) : cubicle.stopComputer(id),
      );
      if (context.json) printJson(computer);
      else line(`${computer.id}  ${computer.state}`);
      return 0;
    },
  };
}

function owner(computer: Computer): string {
  return computer.bot ? `bot ${computer.bot.name}` : "team";
}

export const computerCommands: Record<string, Command> = {
  computers: {
    usage: "cubicle computers [start|stop <computer>]",
    summary: "List the workspace's computers (or start or stop one).",
    arity: [0, 0],
    async run(context) {
      const computers = await (await context.cubicle()).listComputers();
      if (context.json) printJson(computers);
      else
        table(
          ["ID", "OF", "STATE", "PROVIDER", "SESSIONS"],
          computers.map((computer) => [
            computer.id,
            owner(computer),
            computer.state,
            computer.providerKind,
            computer.sessions.map((session) => session.bot.name).join(", ") || "-",
          ]),
        );
      return 0;
    },
  },
  "computers start": change("start", "Starting", "running"),
  "computers stop": change("stop", "Stopping", "stopped"),
};
