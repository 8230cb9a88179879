// The dashboard (web/) is served from a production build. ensureWebBuilt() builds it when its
// sources, config or locked dependencies changed since the last build (a fingerprint is kept in the
// build folder), so the start and test commands pay for a build only when something changed.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { root, runOrExit } from "./run.mjs";

export const WEB_DIR = join(root, "web");
const BUILD_DIR = join(WEB_DIR, ".next");
const FINGERPRINT = join(BUILD_DIR, "cubicle-fingerprint");
const INPUTS = [
  "web/src",
  "web/public",
  "web/next.config.ts",
  "web/package.json",
  "web/tsconfig.json",
  // bundled into the dashboard: the recording format its player reads, the screen element its embed
  // page serves, the origin rule its embedding form checks
  "proxy/src/recording/format.ts",
  "config/src/origin.ts",
  "config/package.json",
  "viewer/src",
  "viewer/package.json",
  "package-lock.json",
];

function filesUnder(path) {
  if (!existsSync(path)) return [];
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .sort()
    .flatMap((name) => filesUnder(join(path, name)));
}

function fingerprint() {
  const hash = createHash("sha256");
  for (const input of INPUTS)
    for (const file of filesUnder(join(root, input)))
      hash.update(relative(root, file)).update("\0").update(readFileSync(file));
  return hash.digest("hex");
}

export function ensureWebBuilt() {
  const current = fingerprint();
  if (existsSync(FINGERPRINT) && readFileSync(FINGERPRINT, "utf8") === current) return;
  runOrExit(process.execPath, [join(root, "node_modules", "next", "dist", "bin", "next"), "build"], {
    cwd: WEB_DIR,
    env: { ...process.env, NODE_ENV: "production", NEXT_TELEMETRY_DISABLED: "1", NEXT_DIST_DIR: "" },
  });
  writeFileSync(FINGERPRINT, current);
}

/**
 * The command that serves the built dashboard: [executable, ...args]. Its own server (web/server.mjs)
 * rather than `next start`, so that it knows the address each browser connects from.
 */
export function webServerCommand(port, host) {
  return [process.execPath, join(WEB_DIR, "server.mjs"), "--port", String(port), "--hostname", host];
}
