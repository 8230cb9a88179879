import { z } from "@hono/zod-openapi";
import { DEFAULT_SHELL_OUTPUT_BYTES, MAX_SHELL_OUTPUT_BYTES, MAX_SHELL_TIMEOUT_MS } from "./shell.ts";

// Session tools and people's computer tools share these, so clients handle one shape of each.

export const PathQuery = (required: boolean) =>
  z.object({
    path: required
      ? z.string().min(1).max(4_096).openapi({ description: "The file or folder (see above)." })
      : z.string().max(4_096).default("").openapi({ description: "The folder; empty for the start folder." }),
  });

export const WriteQuery = PathQuery(true).extend({
  executable: z.enum(["true", "false"]).optional(),
});

export const RawBody = {
  required: true,
  content: { "application/octet-stream": { schema: z.string().openapi({ format: "binary" }) } },
} as const;

const FileEntrySchema = z
  .object({
    name: z.string(),
    path: z.string().openapi({
      description: "Relative to the computer's home; on a Team Computer it can be passed back as is.",
    }),
    type: z.enum(["file", "directory", "symlink"]),
    size: z.number().int(),
    executable: z.boolean(),
    modifiedAt: z.string(),
  })
  .openapi("FileEntry");

export const FileListSchema = z
  .object({ path: z.string(), items: z.array(FileEntrySchema) })
  .openapi("FileList");

export const ShellRequestSchema = z
  .object({
    command: z.string().min(1).max(100_000).openapi({ description: "Run by `sh -c` on the computer." }),
    cwd: z
      .string()
      .max(4_096)
      .optional()
      .openapi({ description: "Working folder; the start folder by default." }),
    timeoutMs: z
      .number()
      .int()
      .min(1)
      .max(MAX_SHELL_TIMEOUT_MS)
      .optional()
      .openapi({ description: `Default SANDBOX_COMMAND_TIMEOUT_MS; at most ${MAX_SHELL_TIMEOUT_MS}.` }),
    env: z
      .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, "a variable name"), z.string().max(32_768))
      .optional(),
    maxOutputBytes: z.number().int().min(1).max(MAX_SHELL_OUTPUT_BYTES).optional(),
  })
  .openapi("ShellRequest");

export type ShellRequest = z.infer<typeof ShellRequestSchema>;

const ShellEventSchema = z
  .object({
    type: z.enum(["stdout", "stderr", "exit", "error"]),
    data: z.string().optional(),
    code: z.union([z.number().int(), z.string()]).optional(),
    message: z.string().optional(),
    truncated: z.boolean().optional(),
  })
  .openapi("ShellEvent");

export const SHELL_STREAM_DESCRIPTION =
  'Answers `application/x-ndjson`: one JSON object per line — `{type:"stdout"|"stderr",data}` as the ' +
  'command writes, then `{type:"exit",code,message?,truncated}` (124 when it timed out, 130 when ' +
  'aborted). A failure after the stream began ends it with `{type:"error",code,message}`. Closing the ' +
  `connection kills the command. Output past \`maxOutputBytes\` (default ${DEFAULT_SHELL_OUTPUT_BYTES}) is dropped.`;

export const ShellEvents = {
  description: "The command's events",
  content: { "application/x-ndjson": { schema: ShellEventSchema } },
} as const;
