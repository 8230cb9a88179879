// The whole test suite, as CI runs it: install, lint/format check, type check, then every test
// (unit, API on PGlite and on a real Postgres that the run starts and removes, the provider
// suites on every backend including real Docker computers, end-to-end against the built dashboard
// and the production Compose stack). It ends with where the time went: each phase, each Vitest
// project and the slowest files (README, "Tests").
import { spawn } from "node:child_process";
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
import { testStages } from "./lib/test-plan.mjs";
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

// Vitest in the plan's stages (scripts/lib/test-plan.mjs): a stage's lanes are Vitest runs at once,
// each one file at a time. Asked for projects by name, one run does just those.
const args = process.argv.slice(2);
const reporters = args.some((arg) => arg.startsWith("--reporter")) ? [] : ["--reporter=default"];
const timesDir = mkdtempSync(join(tmpdir(), "cubicle-test-times-"));
const timeFiles = [];
const vitestRun = (projects) => {
  const times = join(timesDir, `${timeFiles.length}.json`);
  timeFiles.push(times);
  const vitestArgs = [
    "vitest",
    "run",
    ...reporters,
    "--reporter=./scripts/lib/file-times-reporter.ts",
    ...projects.flatMap((name) => ["--project", name]),
    // a lane may hold none of the files a filter asks for
    ...(projects.length > 0 ? ["--passWithNoTests"] : []),
    ...args,
  ];
  console.log(`\n> npx ${vitestArgs.join(" ")}`);
  const child = spawn("npx", vitestArgs, {
    cwd: root,
    stdio: "inherit",
    env: { ...process.env, CUBICLE_TEST_TIMES: times, CUBICLE_SERVICE_IMAGES_STATUS: serviceImages.status },
  });
  return new Promise((resolve) => child.on("exit", (code) => resolve(code ?? 1)));
};
const stages = args.includes("--project") ? [[[]]] : testStages();
let failed = false;
for (const [index, lanes] of stages.entries()) {
  const name = lanes.length > 1 ? lanes.map((lane) => lane.join(", ")).join("  |  ") : lanes[0].join(", ");
  const codes = await phase(`Vitest ${index + 1}: ${name || "as asked"}`, () =>
    Promise.all(lanes.map(vitestRun)),
  );
  failed ||= codes.some((code) => code !== 0);
}
// a run that left the Compose journeys out has no use for the images
if (serviceImages.stop())
  console.log("\nThe service images' build was stopped: no test was left to wait for it.");
else if ((await serviceImagesBuilt) !== 0)
  console.log(
    `\nThe service images were not built; the end of ${serviceImages.log}:\n${serviceImages.tail()}`,
  );
printTimes(timeFiles, { since });
rmSync(timesDir, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
