// Quick start: installs what is missing, then runs Cubicle on its embedded defaults
// (PGlite under DATA_DIR, development secrets generated and kept under DATA_DIR).
import { ensureInstalled, runForeground } from "./lib/run.mjs";

ensureInstalled();
runForeground(process.execPath, ["--import", "tsx", "api/src/main.ts"], {
  ...process.env,
  NODE_ENV: process.env.NODE_ENV ?? "development",
});
