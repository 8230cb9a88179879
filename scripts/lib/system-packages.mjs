// The Debian packages the test suite runs for real: a Postgres server, and the X stack the
// desktop provider drives (Xvfb screens, x11vnc, xdotool input, ImageMagick screenshots, xterm), the
// Chromium that Playwright drives, and websockify, the reference the proxy benchmark measures against.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { runOrExit } from "./run.mjs";

const NEEDED = [
  { pkg: "postgresql", present: () => postgresServerInstalled() },
  { pkg: "xvfb", present: () => onPath("Xvfb") },
  { pkg: "x11vnc", present: () => onPath("x11vnc") },
  { pkg: "xdotool", present: () => onPath("xdotool") },
  { pkg: "imagemagick", present: () => onPath("import") && onPath("convert") },
  { pkg: "xterm", present: () => onPath("xterm") },
  { pkg: "chromium", present: () => onPath("chromium") },
  { pkg: "websockify", present: () => onPath("websockify") },
];

function onPath(binary) {
  return spawnSync("sh", ["-c", `command -v ${binary}`], { stdio: "ignore" }).status === 0;
}

function postgresServerInstalled() {
  const root = "/usr/lib/postgresql";
  return existsSync(root) && readdirSync(root).some((version) => existsSync(`${root}/${version}/bin/initdb`));
}

/** Installs what is missing with apt when we are root on Debian; otherwise says what to install. */
export function ensureSystemPackages() {
  const missing = NEEDED.filter((need) => !need.present()).map((need) => need.pkg);
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0 || !onPath("apt-get")) {
    console.error(
      `The tests need these Debian packages: ${missing.join(" ")}. Install them, then run again.`,
    );
    process.exit(1);
  }
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  runOrExit("apt-get", ["update"], { env });
  runOrExit("apt-get", ["install", "-y", "--no-install-recommends", ...missing], { env });
}
