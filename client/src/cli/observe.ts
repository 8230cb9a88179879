import { writeFile } from "node:fs/promises";
import { type Command, text } from "./command.ts";
import { CliError, line, printJson } from "./output.ts";
import { currentSession } from "./session.ts";

export const observeCommands: Record<string, Command> = {
  observe: {
    usage: "cubicle observe -o <file.png>",
    summary: "Save a screenshot of the session's screen as a PNG.",
    details: ["--json: the screenshot's metadata (size, cursor, screen, active window) and the file."],
    options: { output: { type: "string", short: "o" } },
    arity: [0, 0],
    async run(context, _args, values) {
      const output = text(values, "output");
      if (!output) throw new CliError("USAGE", "observe needs -o <file.png>.", this.usage);
      const { session } = await currentSession(context);
      const { png, ...shot } = await session.observe();
      await writeFile(output, png);
      if (context.json) printJson({ file: output, bytes: png.byteLength, ...shot });
      else line(`${output}  ${shot.width}x${shot.height}  screen ${shot.screen}`);
      return 0;
    },
  },
};
