// Quick start: installs what is missing, then runs Cubicle on its embedded defaults (PGlite under
// DATA_DIR, development secrets generated and kept under DATA_DIR): the api, the screen proxy and,
// for Docker computers, the supervisor (starting dockerd and building the computer image if needed).
import { ensureInstalled, runForeground } from "./lib/run.mjs";

ensureInstalled();
runForeground(process.execPath, ["--import", "tsx", "scripts/stack.ts"], {
  ...process.env,
  NODE_ENV: process.env.NODE_ENV ?? "development",
});
