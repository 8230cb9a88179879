import type { Command } from "./command.ts";
import { bytes, line, printJson, progress, table } from "./output.ts";

export const checkpointCommands: Record<string, Command> = {
  "checkpoints ls": {
    usage: "cubicle checkpoints ls <computer>",
    summary: "List a computer's checkpoints.",
    arity: [1, 1],
    async run(context, [computer = ""]) {
      const checkpoints = await (await context.cubicle()).listCheckpoints(computer);
      if (context.json) printJson(checkpoints);
      else
        table(
          ["ID", "REASON", "FILES", "SIZE", "CREATED"],
          checkpoints.map((c) => [c.id, c.reason, String(c.fileCount), bytes(c.sizeBytes), c.createdAt]),
        );
      return 0;
    },
  },
  "checkpoints take": {
    usage: "cubicle checkpoints take <computer>",
    summary: "Checkpoint a computer's home now.",
    arity: [1, 1],
    async run(context, [computer = ""]) {
      const cubicle = await context.cubicle();
      const checkpoint = await progress(`Taking a checkpoint of ${computer}`, () =>
        cubicle.takeCheckpoint(computer),
      );
      if (context.json) printJson(checkpoint);
      else line(`${checkpoint.id}  ${checkpoint.fileCount} files  ${bytes(checkpoint.sizeBytes)}`);
      return 0;
    },
  },
  "checkpoints restore": {
    usage: "cubicle checkpoints restore <computer> <checkpoint> [--fresh]",
    summary: "Put a computer's home back as a checkpoint has it (--fresh: on a new machine).",
    options: { fresh: { type: "boolean" } },
    arity: [2, 2],
    async run(context, [computer = "", checkpoint = ""], values) {
      const cubicle = await context.cubicle();
      const restored = await progress(`Restoring ${computer} to ${checkpoint}`, () =>
        cubicle.restoreCheckpoint(computer, checkpoint, values.fresh ? "fresh" : "current"),
      );
      if (context.json) printJson(restored);
      else line(`${restored.computerId}  ${restored.state}`);
      return 0;
    },
  },
};
