// `npm run typecheck`: the TypeScript check of every workspace that has one, of the benchmarks and of
// these scripts. npm runs workspaces' scripts one after another; each `tsc -p` uses one core, so
// this runs as many at once as the machine has cores, and prints each failure under its folder.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { root } from "./lib/run.mjs";

const read = (file) => JSON.parse(readFileSync(join(root, file), "utf8"));
const folders = [
  ...read("package.json").workspaces.filter(
    (folder) => read(join(folder, "package.json")).scripts?.typecheck,
  ),
  "bench",
  "scripts",
];
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");

function check(folder) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [tsc, "-p", folder], { cwd: root });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    child.on("close", (code) => resolve({ folder, code, output }));
  });
}

const queue = [...folders];
const failed = [];
await Promise.all(
  Array.from({ length: Math.min(availableParallelism(), queue.length) }, async () => {
    for (let folder = queue.shift(); folder; folder = queue.shift()) {
      const { code, output } = await check(folder);
      if (code !== 0) {
        failed.push(folder);
        console.error(`\n✗ ${folder}: tsc -p ${folder} failed\n${output.trimEnd()}`);
      }
    }
  }),
);
if (failed.length > 0) process.exit(1);
