// The whole test suite, as CI runs it: install, lint/format check, type check, then every test
// (unit, API on PGlite and on a real Postgres that the run starts and removes, the provider
// suites on every backend including real Docker computers, end-to-end against the built dashboard
// and the production Compose stack). It ends with where the time went: each phase, each Vitest
// project and the slowest files (README, "Tests").
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startInBackground } from "./lib/background.mjs";
import {
  ensureBoxDesktopImage,
  ensureComputerImage,
  ensureDaytonaDesktopImage,
  ensureDockerEngine,
  ensureE2bDesktopImage,
} from "./lib/docker-engine.mjs";
import { ensureInstalled, root, runOrExit, runOrExitAsync } from "./lib/run.mjs";
import { ensureSystemPackages } from "./lib/system-packages.mjs";
import { phase, printTimes } from "./lib/times.mjs";
import { ensureWebBuilt } from "./lib/web.mjs";

const since = Date.now();
await phase("install (npm, Debian packages)", () => {
  ensureInstalled();
  ensureSystemPackages("test");
});
await phase("lint and format check", () => runOrExit("npx", ["biome", "check", "."]));
// the type check uses a core and the image builds mostly wait on Debian's mirror: side by side
await phase("type check beside the computer images", async () => {
  const typecheck = runOrExitAsync("npm", ["run", "typecheck", "--silent"]);
  await ensureDockerEngine();
  await ensureComputerImage();
  await ensureE2bDesktopImage();
  await ensureDaytonaDesktopImage();
  await ensureBoxDesktopImage();
  await typecheck;
});
await phase("dashboard build", ensureWebBuilt);

// The production images (and Compose v2 with them) are only for the Compose journeys
// (e2e/test/compose-*.test.ts), which run late: they are built while the first suites run, and
// those journeys wait for the status file named in CUBICLE_SERVICE_IMAGES_STATUS.
const serviceImages = startInBackground("service-images", process.execPath, ["scripts/images.mjs"]);
const serviceImagesBuilt = phase("service images (beside Vitest)", () => serviceImages.exited);

const args = process.argv.slice(2);
const reporters = args.some((arg) => arg.startsWith("--reporter")) ? [] : ["--reporter=default"];
const times = join(mkdtempSync(join(tmpdir(), "cubicle-test-times-")), "files.json");
const vitest = await phase("Vitest", () => {
  console.log(`\n> npx vitest run ${args.join(" ")}`);
  return spawnSync(
    "npx",
    ["vitest", "run", ...reporters, "--reporter=./scripts/lib/file-times-reporter.ts", ...args],
    {
      cwd: root,
      stdio: "inherit",
      env: {
        ...process.env,
        CUBICLE_TEST_TIMES: times,
        CUBICLE_SERVICE_IMAGES_STATUS: serviceImages.status,
      },
    },
  );
});
// a run that left the Compose journeys out has no use for the images
if (serviceImages.stop())
  console.log("\nThe service images' build was stopped: no test was left to wait for it.");
else if ((await serviceImagesBuilt) !== 0)
  console.log(
    `\nThe service images were not built; the end of ${serviceImages.log}:\n${serviceImages.tail()}`,
  );
printTimes(times, { since });
rmSync(join(times, ".."), { recursive: true, force: true });
process.exit(vitest.status ?? 1);
