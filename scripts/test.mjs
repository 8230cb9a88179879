// The whole test suite, as CI runs it: install, lint/format check, type check, then every test
// (unit, API on PGlite and on a real Postgres that the run starts and removes, the provider
// suites on every backend including real Docker computers, end-to-end against the built dashboard
// and the production Compose stack). It ends with where the time went: each phase, each Vitest
// project and the slowest files (README, "Tests").
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ensureBoxDesktopImage,
  ensureComputerImage,
  ensureDaytonaDesktopImage,
  ensureDockerEngine,
  ensureE2bDesktopImage,
  ensureServiceImages,
} from "./lib/docker-engine.mjs";
import { ensureInstalled, root, runOrExit } from "./lib/run.mjs";
import { ensureSystemPackages } from "./lib/system-packages.mjs";
import { phase, printTimes } from "./lib/times.mjs";
import { ensureWebBuilt } from "./lib/web.mjs";

const since = Date.now();
await phase("install (npm, Debian packages)", () => {
  ensureInstalled();
  ensureSystemPackages("test");
});
await phase("lint and format check", () => runOrExit("npx", ["biome", "check", "."]));
await phase("type check", () => runOrExit("npm", ["run", "typecheck", "--silent"]));
await phase("Docker engine and computer images", async () => {
  await ensureDockerEngine();
  await ensureComputerImage();
  await ensureE2bDesktopImage();
  await ensureDaytonaDesktopImage();
  await ensureBoxDesktopImage();
});
await phase("dashboard build", ensureWebBuilt);
// the production images (and Compose v2 with them), for the Compose stack's journey (e2e/test/compose-stack.test.ts)
await phase("service images", ensureServiceImages);

const args = process.argv.slice(2);
const reporters = args.some((arg) => arg.startsWith("--reporter")) ? [] : ["--reporter=default"];
const times = join(mkdtempSync(join(tmpdir(), "cubicle-test-times-")), "files.json");
const vitest = await phase("Vitest", () => {
  console.log(`\n> npx vitest run ${args.join(" ")}`);
  return spawnSync(
    "npx",
    ["vitest", "run", ...reporters, "--reporter=./scripts/lib/file-times-reporter.ts", ...args],
    { cwd: root, stdio: "inherit", env: { ...process.env, CUBICLE_TEST_TIMES: times } },
  );
});
printTimes(times, { since });
rmSync(join(times, ".."), { recursive: true, force: true });
process.exit(vitest.status ?? 1);
