// The one list of Debian packages that Cubicle's start and test commands need on the machine they
// run on, and the programs each one provides. Plain Node (no dependencies): it runs before `npm ci`.
// scripts/system-packages.test.ts fails when the repository invokes a program this list (or the
// base system below) does not cover, so a missing install step is found by the suite, not by a user.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { runOrExit } from "./run.mjs";

/**
 * `commands` says which commands need the package: `images` builds the service and computer images
 * (docker.io, with debootstrap to build the Debian bases air-gapped); `start` runs computers in the local
 * Docker engine (docker.io, with debootstrap to build the base image air-gapped) and, when the owner
 * picks "this host" or SANDBOX_PROVIDER=desktop, on the host's own X stack, and the api's ffmpeg
 * (videos of screen recordings); `test` runs all of that plus a real Postgres server, the Chromium
 * that Playwright drives, websockify (the proxy benchmark's reference) and openssl (the VNC password
 * checks' DES, which Node's OpenSSL lacks).
 */
export const SYSTEM_PACKAGES = [
  { pkg: "docker.io", programs: ["docker", "dockerd"], commands: ["images", "start", "test"] },
  // the supervisor's host firewall rule and egress policies (Docker depends on it too)
  { pkg: "iptables", programs: ["iptables", "ip6tables", "iptables-restore"], commands: ["start", "test"] },
  { pkg: "debootstrap", programs: ["debootstrap"], commands: ["images", "start", "test"] },
  { pkg: "xvfb", programs: ["Xvfb"], commands: ["start", "test"] },
  { pkg: "x11vnc", programs: ["x11vnc"], commands: ["start", "test"] },
  { pkg: "xdotool", programs: ["xdotool"], commands: ["start", "test"] },
  // `convert` alone is not enough: some images ship a stand-in of that name
  { pkg: "imagemagick", programs: ["import", "convert"], commands: ["start", "test"] },
  { pkg: "xterm", programs: ["xterm"], commands: ["start", "test"] },
  { pkg: "chromium", programs: ["chromium"], commands: ["start", "test"] },
  // the api's video export of screen recordings (ffprobe: the tests measure what it made)
  { pkg: "ffmpeg", programs: ["ffmpeg", "ffprobe"], commands: ["start", "test"] },
  { pkg: "postgresql", programs: ["initdb", "pg_ctl", "postgres"], commands: ["test"] },
  { pkg: "websockify", programs: ["websockify"], commands: ["test"] },
  { pkg: "openssl", programs: ["openssl"], commands: ["test"] },
  // the egress tests' stand-in hosts: network namespaces, veth pairs and routes
  { pkg: "iproute2", programs: ["ip"], commands: ["test"] },
];

/**
 * Programs every Debian machine with Node and git has (essential packages, coreutils, util-linux,
 * findutils, tar, apt, perl-base): the scripts may run them without an entry above.
 */
export const BASE_PROGRAMS = [
  "apt-get",
  "bash",
  "cat",
  "dmesg",
  "dpkg",
  "fallocate",
  "find",
  "git",
  "id",
  "kill",
  "mount",
  "node",
  "npm",
  "npx",
  "nsenter",
  "perl",
  "runuser",
  "sh",
  "sha256sum",
  "sort",
  "sync",
  "tar",
  "umount",
  "unshare",
  "xargs",
];

/** Postgres keeps its server programs off PATH, under /usr/lib/postgresql/<major>/bin. */
export function postgresBinDir() {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((version) => existsSync(join(root, version, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], "bin");
}

export function onPath(program) {
  return spawnSync("sh", ["-c", 'command -v "$1"', "sh", program], { stdio: "ignore" }).status === 0;
}

function present(entry) {
  if (entry.pkg === "postgresql") return postgresBinDir() !== undefined;
  return entry.programs.every(onPath);
}

/** The packages `command` ("images", "start" or "test") needs that are not installed here. */
export function missingPackages(command) {
  return SYSTEM_PACKAGES.filter((entry) => entry.commands.includes(command) && !present(entry)).map(
    (entry) => entry.pkg,
  );
}

/**
 * Installs what `command` needs and is missing, with apt, when we are root on Debian; otherwise
 * says what to install and exits.
 */
export function ensureSystemPackages(command) {
  const missing = missingPackages(command);
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0 || !existsSync("/etc/debian_version") || !onPath("apt-get")) {
    console.error(
      `\n✗ \`npm ${command}\` needs these Debian packages: ${missing.join(" ")}. Install them, then run again.`,
    );
    process.exit(1);
  }
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  runOrExit("apt-get", ["update"], { env });
  runOrExit("apt-get", ["install", "-y", "--no-install-recommends", ...missing], { env });
}
