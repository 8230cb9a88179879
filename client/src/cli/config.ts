import { randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { CliError } from "./output.ts";

/** What `cubicle login` stores; the environment's credentials, when it has any, are used instead. */
export interface Config {
  url?: string;
  apiKey?: string;
  workspace?: string;
}

export type Env = Record<string, string | undefined>;

export function configPath(env: Env): string {
  return env.CUBICLE_CONFIG || join(homedir(), ".config", "cubicle", "config.json");
}

/**
 * The credentials in effect, taken as a set: the environment's when it names either CUBICLE_URL or
 * CUBICLE_API_KEY, else the config file's. Mixing them could send the environment's key to the url
 * saved by `login`, maybe another deployment's. CUBICLE_WORKSPACE, when set, goes with either.
 */
export async function settings(env: Env): Promise<Config> {
  const { CUBICLE_URL: url, CUBICLE_API_KEY: apiKey } = env;
  const workspace = env.CUBICLE_WORKSPACE || undefined;
  if (url || apiKey) {
    if (!url || !apiKey) {
      const [set, unset] = url ? ["CUBICLE_URL", "CUBICLE_API_KEY"] : ["CUBICLE_API_KEY", "CUBICLE_URL"];
      throw new CliError(
        "NOT_CONFIGURED",
        `${set} is set but ${unset} is not: set both, or neither to use the credentials saved by \`cubicle login\`.`,
      );
    }
    return { url, apiKey, workspace };
  }
  const file = await readJson<Config>(configPath(env));
  return { url: file?.url, apiKey: file?.apiKey, workspace: workspace ?? file?.workspace };
}

export async function saveConfig(env: Env, config: Config): Promise<string> {
  const path = configPath(env);
  await writePrivate(path, config);
  return path;
}

/** A JSON file, or undefined when there is none. */
export async function readJson<T>(path: string): Promise<T | undefined> {
  const text = await readFile(path, "utf8").catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined;
    throw error;
  });
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    // the parser's message alone does not say which file to fix
    throw new Error(`${path} is not valid JSON (${(error as Error).message})`);
  }
}

/**
 * Writes JSON only its owner may read: it holds an API key (or a session's fence). The content goes
 * to a new 0600 file beside it, renamed over the old one: writing into an existing file would keep
 * that file's mode, and a world-readable one would show the key until a chmod after.
 */
export async function writePrivate(path: string, value: unknown): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    await writeFile(temporary, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600, flag: "wx" });
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

export async function removeFile(path: string): Promise<void> {
  await rm(path, { force: true });
}
