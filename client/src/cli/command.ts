import type { parseArgs } from "node:util";
import { Cubicle } from "../index.ts";
import { type Env, settings } from "./config.ts";
import { CliError } from "./output.ts";

/** What a command's options parse to. */
export type Values = ReturnType<typeof parseArgs>["values"];

export interface Context {
  env: Env;
  /** `--json`: one JSON document on stdout (NDJSON for `shell`), problems as JSON on stderr. */
  json: boolean;
  /** The client for the credentials in effect; refuses when there are none. */
  cubicle(): Promise<Cubicle>;
}

export interface Command {
  /** "files get <path> [-o <file>]": what `--help` and a usage error print. */
  usage: string;
  summary: string;
  /** Lines on its options and behaviour, for `--help`. */
  details?: string[];
  options?: Record<string, { type: "string" | "boolean"; short?: string }>;
  /** How many positional arguments it takes: [least, most]. */
  arity: [number, number];
  /** Runs the command; its result is the CLI's exit code. */
  run(context: Context, args: string[], values: Values): Promise<number>;
}

export function context(env: Env, json: boolean): Context {
  let client: Promise<Cubicle> | undefined;
  return {
    env,
    json,
    cubicle() {
      client ??= settings(env).then(({ url, apiKey, workspace }) => {
        if (!url || !apiKey)
          throw new CliError(
            "NOT_CONFIGURED",
            "Not logged in: set CUBICLE_URL and CUBICLE_API_KEY, or run `cubicle login --url <url>` (it reads the key from stdin).",
          );
        return new Cubicle({ url, apiKey, workspaceId: workspace });
      });
      return client;
    },
  };
}

/** A string option's value (parseArgs gives strings for `type: "string"`). */
export function text(values: Values, name: string): string | undefined {
  const value = values[name];
  return typeof value === "string" ? value : undefined;
}
