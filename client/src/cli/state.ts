import { dirname, join } from "node:path";
import { configPath, type Env, readJson, removeFile, writePrivate } from "./config.ts";

/**
 * The session `cubicle session open` opened, kept between invocations so later commands act in it.
 * The fence is the session's own (the api's record of the session carries the same one, which is
 * what a resumed session sends); it is kept so a script can read it here too.
 */
export interface SessionState {
  url: string;
  workspaceId: string;
  botId: string;
  botName: string;
  sessionId: string;
  computerId: string;
  fence: number;
}

export function statePath(env: Env): string {
  return env.CUBICLE_SESSION_FILE || join(dirname(configPath(env)), "session.json");
}

export const readState = (env: Env) => readJson<SessionState>(statePath(env));
export const saveState = (env: Env, state: SessionState) => writePrivate(statePath(env), state);
export const clearState = (env: Env) => removeFile(statePath(env));
