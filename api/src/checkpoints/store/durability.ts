import { spawn } from "node:child_process";
import { promises as fs } from "node:fs";

export async function fsyncPath(path: string): Promise<void> {
  const handle = await fs.open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Makes everything written on the filesystem holding `path` durable at once (`sync
 * --file-system`, the syncfs call Node lacks): one flush for a revision's thousands of new
 * objects instead of an fsync, and a journal commit, for each of them.
 */
export function syncFileSystem(path: string): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn("sync", ["--file-system", path], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (text: string) => {
      stderr = (stderr + text).slice(-1_000);
    });
    child.once("error", fail);
    child.once("close", (code) =>
      code === 0 ? done() : fail(new Error(`sync --file-system ${path} exited ${code}: ${stderr.trim()}`)),
    );
  });
}
