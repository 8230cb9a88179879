// The whole test suite, as CI runs it: install, lint/format check, type check, then every test
// (unit, API on PGlite and on a real Postgres that the run starts and removes, the provider
// suites on every backend including real Docker computers, end-to-end against the built dashboard
// and the production Compose stack).
import {
  ensureBoxDesktopImage,
  ensureComputerImage,
  ensureDaytonaDesktopImage,
  ensureDockerEngine,
  ensureE2bDesktopImage,
  ensureServiceImages,
} from "./lib/docker-engine.mjs";
import { ensureInstalled, runOrExit } from "./lib/run.mjs";
import { ensureSystemPackages } from "./lib/system-packages.mjs";
import { ensureWebBuilt } from "./lib/web.mjs";

ensureInstalled();
ensureSystemPackages("test");
runOrExit("npx", ["biome", "check", "."]);
runOrExit("npm", ["run", "typecheck", "--silent"]);
await ensureDockerEngine();
await ensureComputerImage();
await ensureE2bDesktopImage();
await ensureDaytonaDesktopImage();
await ensureBoxDesktopImage();
ensureWebBuilt();
// the production images (and Compose v2 with them), for the Compose stack's journey (e2e/test/compose-stack.test.ts)
ensureServiceImages();
runOrExit("npx", ["vitest", "run", ...process.argv.slice(2)]);
