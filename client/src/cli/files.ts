import { createReadStream, createWriteStream } from "node:fs";
import { stat } from "node:fs/promises";
import { Readable, type Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { type Command, text } from "./command.ts";
import { bytes, line, printJson, table } from "./output.ts";
import { currentSession } from "./session.ts";

export const fileCommands: Record<string, Command> = {
  "files ls": {
    usage: "cubicle files ls [path]",
    summary: "List a folder on the session's computer (the bot's folder by default).",
    arity: [0, 1],
    async run(context, [path = ""]) {
      const { session } = await currentSession(context);
      const list = await session.listFiles(path);
      if (context.json) printJson(list);
      else
        table(
          ["TYPE", "SIZE", "MODIFIED", "NAME"],
          list.items.map((entry) => [
            entry.type,
            entry.type === "file" ? bytes(entry.size) : "-",
            entry.modifiedAt,
            entry.type === "directory" ? `${entry.name}/` : entry.name,
          ]),
        );
      return 0;
    },
  },
  "files get": {
    usage: "cubicle files get <path> [-o <file>]",
    summary: "Download a file, streamed to stdout or to a local file.",
    details: ["--json (with -o): {remote, local, bytes} on stdout; without -o stdout is the file."],
    options: { output: { type: "string", short: "o" } },
    arity: [1, 1],
    async run(context, [remote = ""], values) {
      const { session } = await currentSession(context);
      const output = text(values, "output");
      const stream = Readable.fromWeb((await session.downloadFile(remote)) as NodeReadableStream<Uint8Array>);
      if (output === undefined) {
        await pipeline(stream, process.stdout as Writable, { end: false });
        return 0;
      }
      await pipeline(stream, createWriteStream(output));
      const size = (await stat(output)).size;
      if (context.json) printJson({ remote, local: output, bytes: size });
      else line(`${remote} → ${output} (${bytes(size)})`);
      return 0;
    },
  },
  "files put": {
    usage: "cubicle files put <local> <remote> [--executable]",
    summary: "Upload a local file to the session's computer, streamed as it is read.",
    options: { executable: { type: "boolean" } },
    arity: [2, 2],
    async run(context, [local = "", remote = ""], values) {
      // read first: a missing local file is refused before the session is touched
      const size = (await stat(local)).size;
      const { session } = await currentSession(context);
      const stream = Readable.toWeb(createReadStream(local)) as ReadableStream<Uint8Array>;
      await session.writeFile(remote, stream, { executable: values.executable === true });
      if (context.json) printJson({ local, remote, bytes: size });
      else line(`${local} → ${remote} (${bytes(size)})`);
      return 0;
    },
  },
};
