// The Docker engine and the images Cubicle runs in it. Plain Node (no dependencies).
// ensureDockerEngine(): makes `docker info` work, starting dockerd when we are root.
// ensureComputerImage(): builds cubicle-computer:latest from computer-image/, first building
// debian:bookworm-slim air-gapped with debootstrap when no registry can be reached.
// ensureE2bDesktopImage(): builds cubicle-e2b-desktop:latest (the E2B emulator's desktop) from
// emulators/images/e2b-desktop/, on top of the computer image; ensureDaytonaDesktopImage() and
// ensureBoxDesktopImage() likewise build cubicle-daytona-desktop:latest and
// cubicle-box-desktop:latest (the Daytona and Box emulators') from emulators/images/daytona-desktop/
// and box-desktop/. ensureServiceImages() builds the service images (deploy/images/Dockerfile), and
// ensureDockerPlugins() installs Compose v2 and buildx where the Docker CLI finds them. They expect
// ensureSystemPackages() (system-packages.mjs) to have installed docker.io and debootstrap.
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
// by path: this runs before `npm ci`, when no package can be resolved by name
import { imageVersion } from "../../computer-image/version.mjs";
import { root, runOrExit } from "./run.mjs";
import { onPath } from "./system-packages.mjs";
import { ensureWebBuilt } from "./web.mjs";

export const COMPUTER_IMAGE = "cubicle-computer:latest";
export const E2B_DESKTOP_IMAGE = "cubicle-e2b-desktop:latest";
export const DAYTONA_DESKTOP_IMAGE = "cubicle-daytona-desktop:latest";
export const BOX_DESKTOP_IMAGE = "cubicle-box-desktop:latest";
/** The services' images (deploy/images/Dockerfile), each the Dockerfile target of its name. */
export const SERVICE_IMAGES = ["api", "proxy", "supervisor", "web", "postgres"].map((target) => ({
  target,
  image: `cubicle-${target}:latest`,
}));
const SOCKET = "unix:///var/run/docker.sock";
/** The computers' Debian (and this machine's). */
const SUITE = "bookworm";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (since) => `${((Date.now() - since) / 1000).toFixed(1)} s`;

function succeeds(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: "ignore", ...options });
  return result.status === 0;
}

function fail(message) {
  console.error(`\n✗ ${message}`);
  process.exit(1);
}

/** Makes `docker info` work: starts dockerd when we are root. */
export async function ensureDockerEngine() {
  if (succeeds("docker", ["info"], { timeout: 20_000 })) return;
  if (process.getuid?.() !== 0 || !onPath("dockerd")) {
    fail(
      "The Docker engine is not reachable (`docker info` fails). Start Docker (or give this user access " +
        "to its socket), then run again.",
    );
  }
  const log = join(tmpdir(), "cubicle-dockerd.log");
  console.log(`Starting dockerd (log: ${log})`);
  const started = Date.now();
  const out = openSync(log, "a");
  const daemon = spawn("dockerd", ["--host", SOCKET], { detached: true, stdio: ["ignore", out, out] });
  daemon.unref();
  let exited = false;
  daemon.on("exit", () => {
    exited = true;
  });
  while (Date.now() - started < 60_000) {
    if (succeeds("docker", ["info"], { timeout: 10_000 })) {
      console.log(`dockerd is up (${seconds(started)})`);
      return;
    }
    if (exited) break;
    await sleep(500);
  }
  fail(`dockerd did not come up${exited ? " (it exited)" : " within 60 s"}; see ${log}`);
}

/**
 * The Debian mirror for `suite`: $DEBIAN_MIRROR, else the first apt source of this machine that
 * lists the suite, else the one that lists this machine's own (bookworm): one archive serves every
 * suite.
 */
export function debianMirror(suite = SUITE) {
  if (process.env.DEBIAN_MIRROR) return process.env.DEBIAN_MIRROR;
  const mirror = aptSourceFor(suite) ?? aptSourceFor(SUITE);
  if (mirror) return mirror;
  fail(`No Debian ${suite} mirror found in the apt configuration; set DEBIAN_MIRROR.`);
}

/** The URI of the first enabled apt source of this machine that lists `suite`. */
function aptSourceFor(suite) {
  const dir = "/etc/apt/sources.list.d";
  const files = existsSync(dir)
    ? readdirSync(dir)
        .filter((name) => name.endsWith(".sources"))
        .sort()
    : [];
  for (const name of files) {
    // deb822 stanzas: "Field: value" lines (continuations start with white space), blank-line separated.
    for (const stanza of readFileSync(join(dir, name), "utf8").split(/\n\s*\n/)) {
      const fields = {};
      for (const line of stanza.replace(/\n[ \t]+/g, " ").split("\n")) {
        const match = /^([A-Za-z-]+):\s*(.*)$/.exec(line.trim());
        if (match) fields[match[1].toLowerCase()] = match[2].split(/\s+/);
      }
      if (fields.enabled?.[0] === "no") continue;
      if (fields.types?.includes("deb") && fields.suites?.includes(suite) && fields.uris?.[0]) {
        return fields.uris[0];
      }
    }
  }
  if (existsSync("/etc/apt/sources.list")) {
    for (const line of readFileSync("/etc/apt/sources.list", "utf8").split("\n")) {
      const words = line
        .replace(/#.*/, "")
        .replace(/\[[^\]]*\]/, "")
        .trim()
        .split(/\s+/);
      if (words[0] === "deb" && words[2] === suite) return words[1];
    }
  }
  return undefined;
}

/** Builds debian:<suite>-slim from a Debian mirror with debootstrap (no registry needed). */
function buildBaseImage(suite) {
  const image = debianImage(suite);
  if (process.getuid?.() !== 0 || !onPath("debootstrap")) {
    fail(`${image} is missing, cannot be pulled, and building it needs root and debootstrap.`);
  }
  const mirror = debianMirror(suite);
  const dir = mkdtempSync(join(tmpdir(), "cubicle-rootfs-"));
  const started = Date.now();
  console.log(`Building ${image} with debootstrap from ${mirror}`);
  try {
    runOrExit("debootstrap", ["--variant=minbase", suite, dir, mirror]);
    rmSync(join(dir, "var/cache/apt/archives"), { recursive: true, force: true });
    rmSync(join(dir, "var/lib/apt/lists"), { recursive: true, force: true });
    runOrExit("bash", [
      "-o",
      "pipefail",
      "-c",
      `tar --numeric-owner -C "$1" -c . | docker import --change 'CMD ["bash"]' - "$2"`,
      "import",
      dir,
      image,
    ]);
  } finally {
    removeRootfs(dir);
  }
  console.log(`Built ${image} (${seconds(started)})`);
}

const debianImage = (suite) => `debian:${suite}-slim`;

/** Makes sure debian:<suite>-slim exists: pulled where a registry answers, else built with debootstrap. */
export function ensureDebianImage(suite) {
  const image = debianImage(suite);
  if (succeeds("docker", ["image", "inspect", image])) return;
  console.log(`Pulling ${image}`);
  if (!succeeds("docker", ["pull", image], { timeout: 30_000 })) {
    console.log(`Cannot pull ${image}; building it locally.`);
    buildBaseImage(suite);
  }
}

/** Removes a debootstrap directory, unmounting anything debootstrap may have left mounted inside it. */
function removeRootfs(dir) {
  const mounts = readFileSync("/proc/mounts", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[1])
    .filter((point) => point?.startsWith(`${dir}/`))
    .sort()
    .reverse();
  for (const point of mounts) spawnSync("umount", ["-l", point], { stdio: "inherit" });
  rmSync(dir, { recursive: true, force: true });
}

/**
 * Makes `docker compose` (v2) and `docker buildx` (BuildKit, which builds only the stages a target
 * needs and sends only changed files) work: Debian bookworm's docker.io has neither, so they are
 * taken from trixie's docker-compose and docker-buildx packages (installed in an image, with no
 * network beyond Debian's mirror) and placed where the Docker CLI looks for plugins.
 */
export function ensureDockerPlugins() {
  const missing = ["compose", "buildx"].filter((plugin) => !succeeds("docker", [plugin, "version"]));
  if (missing.length === 0) return;
  ensureDebianImage("trixie");
  const image = "cubicle-docker-plugins:latest";
  console.log(`Installing docker ${missing.join(" and ")} from Debian trixie's packages`);
  runOrExit("docker", [
    "build",
    "--network",
    "host",
    "-f",
    "deploy/images/docker-plugins.Dockerfile",
    "-t",
    image,
    "deploy/images",
  ]);
  const container = spawnSync("docker", ["create", image], { encoding: "utf8" }).stdout.trim();
  const pluginDir =
    process.getuid?.() === 0
      ? "/usr/local/lib/docker/cli-plugins"
      : join(homedir(), ".docker", "cli-plugins");
  mkdirSync(pluginDir, { recursive: true });
  try {
    for (const plugin of missing) {
      runOrExit("docker", ["cp", `${container}:/usr/libexec/docker/cli-plugins/docker-${plugin}`, pluginDir]);
    }
  } finally {
    spawnSync("docker", ["rm", container], { stdio: "ignore" });
  }
  for (const plugin of missing) {
    if (!succeeds("docker", [plugin, "version"]))
      fail(`docker ${plugin} does not run after installing it in ${pluginDir}`);
  }
}

/** Makes sure the base image exists, then builds cubicle-computer:latest (cached layers make it quick). */
export async function ensureComputerImage() {
  ensureDebianImage(SUITE);
  const started = Date.now();
  console.log(`Building ${COMPUTER_IMAGE}`);
  runOrExit("docker", [
    "build",
    "--network",
    "host",
    "-t",
    COMPUTER_IMAGE,
    "--label",
    `cubicle.image.version=${imageVersion(join(root, "computer-image"))}`,
    "computer-image",
  ]);
  console.log(`Built ${COMPUTER_IMAGE} (${seconds(started)})`);
}

/**
 * Builds one emulator's desktop image (a vendor's template reproduced) from its folder under
 * emulators/images/. It is built FROM the computer image (call ensureComputerImage() first), so its
 * layers are shared and the build needs no registry.
 */
async function ensureEmulatorImage(image, folder) {
  const started = Date.now();
  const context = `emulators/images/${folder}`;
  console.log(`Building ${image}`);
  runOrExit("docker", [
    "build",
    "--network",
    "host",
    "-t",
    image,
    "--label",
    `cubicle.image.version=${imageVersion(join(root, context))}`,
    context,
  ]);
  console.log(`Built ${image} (${seconds(started)})`);
}

/** Builds cubicle-e2b-desktop:latest, E2B's desktop template for the E2B emulator. */
export const ensureE2bDesktopImage = () => ensureEmulatorImage(E2B_DESKTOP_IMAGE, "e2b-desktop");

/** Builds cubicle-daytona-desktop:latest, Daytona's default sandbox for the Daytona emulator. */
export const ensureDaytonaDesktopImage = () => ensureEmulatorImage(DAYTONA_DESKTOP_IMAGE, "daytona-desktop");

/** Builds cubicle-box-desktop:latest, Box's sandbox template for the Box emulator. */
export const ensureBoxDesktopImage = () => ensureEmulatorImage(BOX_DESKTOP_IMAGE, "box-desktop");

/**
 * The workspaces a service runs with (its own and the @cubicle/* packages it depends on, through
 * theirs), with their manifests stripped of devDependencies: what its image's install is made of.
 */
function productionManifests(service) {
  const read = (file) => JSON.parse(readFileSync(join(root, file), "utf8"));
  const rootManifest = read("package.json");
  const byName = new Map(
    rootManifest.workspaces.map((folder) => [read(join(folder, "package.json")).name, folder]),
  );
  const folders = new Set();
  const visit = (name) => {
    const folder = byName.get(name);
    if (!folder || folders.has(folder)) return;
    folders.add(folder);
    for (const dependency of Object.keys(read(join(folder, "package.json")).dependencies ?? {}))
      visit(dependency);
  };
  visit(`@cubicle/${service}`);
  const strip = ({ devDependencies: _, ...manifest }) => manifest;
  const manifests = { "package.json": { ...strip(rootManifest), workspaces: [...folders] } };
  for (const folder of folders)
    manifests[join(folder, "package.json")] = strip(read(join(folder, "package.json")));
  return manifests;
}

/**
 * Installs one service's production dependencies into .images/<service>/node_modules, with this
 * machine's npm and its cache (and whatever registry access it has): the image build then copies
 * them and needs no network. The install sees only the service's own workspaces and no
 * devDependencies, so nothing a developer needs (nor anything another service needs, such as the
 * dashboard's Next.js) lands in the image; the lockfile still fixes every version. An install is
 * kept per lockfile and manifests under the user's cache folder, so a fresh clone (CI's) copies it
 * instead of installing again.
 */
function stageDependencies(service) {
  const manifests = productionManifests(service);
  const lockfile = readFileSync(join(root, "package-lock.json"));
  const hash = createHash("sha256").update(JSON.stringify(manifests)).update(lockfile);
  const cacheRoot = join(homedir(), ".cache", "cubicle", "staged");
  const cached = join(cacheRoot, `${service}-${hash.digest("hex").slice(0, 16)}`);
  if (!existsSync(join(cached, "node_modules"))) {
    const fresh = `${cached}.partial`;
    rmSync(fresh, { recursive: true, force: true });
    for (const [file, manifest] of Object.entries(manifests)) {
      mkdirSync(dirname(join(fresh, file)), { recursive: true });
      writeFileSync(join(fresh, file), JSON.stringify(manifest, null, 2));
    }
    writeFileSync(join(fresh, "package-lock.json"), lockfile);
    // `install`, not `ci`: the lockfile lists workspaces and dev tools this install leaves out
    runOrExit(
      "npm",
      ["install", "--omit=dev", "--no-audit", "--no-fund", "--workspace", `@cubicle/${service}`],
      {
        cwd: fresh,
      },
    );
    // older installs of this service are of another lockfile: only the newest is kept
    for (const name of existsSync(cacheRoot) ? readdirSync(cacheRoot) : []) {
      if (name.startsWith(`${service}-`) && join(cacheRoot, name) !== fresh) {
        rmSync(join(cacheRoot, name), { recursive: true, force: true });
      }
    }
    renameSync(fresh, cached);
  }
  const dir = join(root, ".images", service);
  rmSync(dir, { recursive: true, force: true });
  cpSync(join(cached, "node_modules"), join(dir, "node_modules"), {
    recursive: true,
    verbatimSymlinks: true,
  });
}

/**
 * Builds the services' images from deploy/images/Dockerfile on debian:trixie-slim (made with
 * debootstrap when it cannot be pulled), labelled with the version and the git revision; Docker's
 * layer cache keeps a rebuild to what changed. Prints each image's size.
 */
export function ensureServiceImages() {
  ensureDebianImage("trixie");
  ensureDockerPlugins();
  ensureWebBuilt();
  for (const { target } of SERVICE_IMAGES) if (target !== "postgres") stageDependencies(target);
  const version = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version;
  const revision = spawnSync("git", ["rev-parse", "HEAD"], { cwd: root, encoding: "utf8" }).stdout?.trim();
  const sizes = {};
  for (const { target, image } of SERVICE_IMAGES) {
    const started = Date.now();
    runOrExit(
      "docker",
      [
        "build",
        "--network",
        "host",
        "-f",
        "deploy/images/Dockerfile",
        "--target",
        target,
        // labels last, as flags: a new revision must not invalidate the cached layers
        "--label",
        `org.opencontainers.image.version=${version}`,
        "--label",
        `org.opencontainers.image.revision=${revision || "unknown"}`,
        "-t",
        image,
        ".",
      ],
      { env: { ...process.env, DOCKER_BUILDKIT: "1" } },
    );
    const size = spawnSync("docker", ["image", "inspect", "-f", "{{.Size}}", image], { encoding: "utf8" });
    sizes[image] = Number(size.stdout.trim());
    console.log(`Built ${image} (${seconds(started)})`);
  }
  console.log("\nImages:");
  for (const [image, bytes] of Object.entries(sizes)) {
    console.log(`  ${image.padEnd(28)} ${(bytes / 1024 / 1024).toFixed(0).padStart(5)} MiB`);
  }
}
