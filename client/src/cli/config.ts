import { chmod, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

/** What `cubicle login` stores; the environment's variables win over it. */
export interface Config {
  url?: string;
  apiKey?: string;
  workspace?: string;
}

export type Env = Record<string, string | undefined>;

export function configPath(env: Env): string {
  return env.CUBICLE_CONFIG || join(homedir(), ".config", "cubicle", "config.json");
}

/** The credentials in effect: each variable set in the environment, else the config file's. */
export async function settings(env: Env): Promise<Config> {
  const file = await readJson<Config>(configPath(env));
  return {
    url: env.CUBICLE_URL || file?.url,
    apiKey: env.CUBICLE_API_KEY || file?.apiKey,
    workspace: env.CUBICLE_WORKSPACE || file?.workspace,
  };
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
  return text === undefined ? undefined : (JSON.parse(text) as T);
}

/** Writes JSON only its owner may read: it holds an API key (or a session's fence). */
export async function writePrivate(path: string, value: unknown): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  await writeFile(path, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  // the mode above applies only to a new file: an older one keeps its own unless changed
  await chmod(path, 0o600);
}

export async function removeFile(path: string): Promise<void> {
  await rm(path, { force: true });
}
