import { readFileSync } from "node:fs";
import type { Env } from "./env-reader.ts";

/** A secret's file may hold a key, a token or a URL with a password; nothing near this size. */
const MAX_SECRET_FILE_BYTES = 64 * 1024;

/**
 * Secrets given as files (Compose and Kubernetes `secrets:`): for each name, `<NAME>_FILE` holds
 * the path of a file whose contents (without the trailing newline editors add) become `<NAME>`.
 * The result is the environment with those values in, for the service's usual validation; a file
 * that cannot be read, is empty, or is given beside the variable itself is a problem naming the
 * variable and the path, never the contents.
 */
export function withSecretFiles(source: Env, names: readonly string[]): { env: Env; problems: string[] } {
  const env: Record<string, string | undefined> = { ...source };
  const problems: string[] = [];
  for (const name of names) {
    const path = source[`${name}_FILE`]?.trim();
    if (!path) continue;
    delete env[`${name}_FILE`];
    if (source[name]?.trim()) {
      problems.push(`${name} and ${name}_FILE are both set; keep one`);
      continue;
    }
    const contents = readSecret(path);
    if (typeof contents !== "string") {
      problems.push(`${name}_FILE: cannot read ${path} (${contents.reason})`);
      continue;
    }
    const value = contents.replace(/\r?\n$/, "");
    if (value.trim() === "") problems.push(`${name}_FILE: ${path} is empty`);
    else env[name] = value;
  }
  return { env: Object.freeze(env), problems };
}

function readSecret(path: string): string | { reason: string } {
  try {
    const bytes = readFileSync(path);
    if (bytes.length > MAX_SECRET_FILE_BYTES)
      return { reason: `over ${MAX_SECRET_FILE_BYTES / 1024} KiB: not a secret file` };
    return bytes.toString("utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return {
      reason: code === "ENOENT" ? "no such file" : code === "EISDIR" ? "a directory" : (code ?? "unreadable"),
    };
  }
}
