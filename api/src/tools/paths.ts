import type { Computer } from "@cubicle/db";
import { ProviderError } from "@cubicle/providers/contract";
import { homeRelativePath } from "@cubicle/providers/kernel";
import type { Machine } from "../computers/repository.ts";

/**
 * Where a session's paths point (docs/architecture.md, "Domain"). On a Team Computer a bot starts
 * in `bots/<bot id>/`: a relative path is taken from there, while `shared/…` and `bots/…` name the
 * team home's own folders. On a Private Computer paths are relative to the bot's home. The
 * caller's path is normalised first by the providers' one rule (no absolute paths, no `..` that
 * climbs out, no NUL or backslash); the provider then also refuses symlink escapes. These folders
 * organise work, they are not security boundaries: every bot of a Team Computer can reach the
 * whole team home.
 */
export interface SessionPaths {
  /** The home-relative folder relative paths start in ("" for the home itself). */
  readonly start: string;
  /** The caller's path as a home-relative one. */
  resolve(path: string): string;
}

const TEAM_ROOT_FOLDERS = ["shared", "bots"];

export const botFolder = (botId: string) => `bots/${botId}`;

export function sessionPaths(computer: Computer, botId: string): SessionPaths {
  if (computer.bot_id !== null) return { start: "", resolve: homeRelativePath };
  const start = botFolder(botId);
  return {
    start,
    resolve(path) {
      const relative = homeRelativePath(path);
      const top = relative.split("/")[0] ?? "";
      if (TEAM_ROOT_FOLDERS.includes(top)) return relative;
      return relative === "" ? start : `${start}/${relative}`;
    },
  };
}

/**
 * Makes sure the bot's starting folder exists on a Team Computer (commands start in it, and a
 * listing of it should not be "not found"). The provider contract has no mkdir; writing a file
 * creates the folders above it, so an empty `.keep` marks a folder that was not there.
 */
export async function ensureStartFolder(machine: Machine, paths: SessionPaths): Promise<void> {
  if (paths.start === "") return;
  try {
    await machine.provider.listFiles(machine.ref, paths.start);
  } catch (error) {
    if (!(error instanceof ProviderError) || error.code !== "FILE_NOT_FOUND") throw error;
    await machine.provider.writeFile(machine.ref, `${paths.start}/.keep`, new Uint8Array());
  }
}
