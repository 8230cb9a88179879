import { promises as fs } from "node:fs";
import { join, resolve } from "node:path";
import {
  type ActResult,
  type CommandEvent,
  type CommandRequest,
  MAX_SCREENS,
  type MachineRef,
  type Observation,
  ProviderError,
  type SandboxProvider,
  type ScreenTarget,
} from "../contract/index.ts";
import { validateActions } from "../kernel/actions.ts";
import { checkControlPassword } from "../kernel/control-password.ts";
import { OPEN_EGRESS_ONLY, setOpenEgress } from "../kernel/egress.ts";
import type { FaultPlan } from "../kernel/faults.ts";
import { type AppPrograms, launchByCommand } from "../kernel/launch.ts";
import { exportHome, importHome, listHome } from "./archive.ts";
import { closeBrowsers, settleBrowsers } from "./browsers.ts";
import { runCommand } from "./commands.ts";
import { deleteFile, listFiles, readFile, writeFile } from "./files.ts";
import { HOME_KEY, type Machine, MachineRegistry } from "./machines.ts";
import { findOnPath, killCommandGroup } from "./processes.ts";
import { ScreenManager, type Tools } from "./screens.ts";

export interface DesktopProviderOptions {
  /** Each computer's home is `<homesDir>/<homeKey>`. */
  homesDir: string;
  /** Folders outside the home that file operations may also reach (through symlinks in the home). */
  allowedRoots?: string[];
  faults?: FaultPlan;
  /** The first X display number to try for screens (default 40). */
  displayBase?: number;
  /** Commands always run as the service's own user; switching users is not supported. */
  commandUser?: never;
}

export type DesktopProvider = SandboxProvider & {
  /** Stops every machine: kills all commands, archive jobs and screens this provider started. */
  shutdown(): Promise<void>;
};

function findTools(): Tools & { tar: string } {
  return {
    xvfb: findOnPath("Xvfb"),
    x11vnc: findOnPath("x11vnc"),
    xdotool: findOnPath("xdotool"),
    import: findOnPath("import"),
    xterm: findOnPath("xterm"),
    tar: findOnPath("tar") ?? "/bin/tar",
  };
}

/**
 * The host's own programs. Chromium keeps its profile in the home's `.browser-profiles/chromium`
 * as in every computer; run by root it needs `--no-sandbox` (it refuses to start otherwise).
 */
function hostApps(): AppPrograms {
  const asRoot = process.getuid?.() === 0 ? " --no-sandbox" : "";
  return {
    browser: {
      program: findOnPath("chromium") ?? "chromium",
      shellArgs: `--user-data-dir="$HOME"/.browser-profiles/chromium --no-first-run${asRoot}`,
    },
    terminal: { program: findOnPath("xterm") ?? "xterm" },
  };
}

/** A real path for an allowed root; a root that does not exist yet is kept as given. */
async function realRoot(root: string): Promise<string> {
  return fs.realpath(root).catch(() => resolve(root));
}

/**
 * Computers on the host itself: each is a home folder plus the processes started for it, run as
 * the service's own user. Isolation is by confinement of the file API and a scrubbed environment,
 * not by a sandbox; use it where the people using the computers are trusted with the host.
 */
export function createDesktopProvider(options: DesktopProviderOptions): DesktopProvider {
  const tools = findTools();
  const graphical = tools.xvfb !== null && tools.x11vnc !== null && tools.xdotool !== null;
  const registry = new MachineRegistry();
  const screens = new ScreenManager(tools, options.displayBase ?? 40);
  const apps = hostApps();

  const requireGraphical = () => {
    if (!graphical) {
      throw new ProviderError(
        "GRAPHICAL_UNAVAILABLE",
        "this host cannot show screens: Xvfb, x11vnc and xdotool must all be installed",
      );
    }
  };
  const requireScreen = (index: number) => {
    if (!Number.isInteger(index) || index < 0 || index >= MAX_SCREENS) {
      throw new ProviderError("INVALID_SCREEN", `screen must be an integer from 0 to ${MAX_SCREENS - 1}`);
    }
  };

  async function stopMachine(machine: Machine): Promise<void> {
    machine.running = false;
    machine.generation++;
    // first, while their screens are still up: a browser killed outright (or one whose X server
    // went away) loses what it had not written yet, cookies included
    await closeBrowsers(machine.files.home);
    const groups = [...machine.groups];
    machine.groups.clear();
    await Promise.all([screens.stopAll(machine), ...groups.map((child) => killCommandGroup(child))]);
  }

  async function* run(ref: MachineRef, request: CommandRequest): AsyncGenerator<CommandEvent> {
    const machine = registry.requireRunning(ref);
    yield* runCommand(machine, request);
  }

  const provider: DesktopProvider = {
    kind: "desktop",
    // its programs are the host's own, with the host's network: nothing stands between to enforce
    capabilities: { graphical, maxScreens: MAX_SCREENS, pty: false, egress: OPEN_EGRESS_ONLY },
    // this host's own programs: no credential to check
    verifyAccess: async () => undefined,

    setEgress: (ref, policy) => setOpenEgress(provider, ref, policy),

    async provision(ref) {
      if (!HOME_KEY.test(ref.homeKey)) {
        throw new ProviderError("INVALID_PATH", "a home key is 1-128 letters, digits, '.', '_' or '-'");
      }
      if (options.faults?.take("provision")) {
        throw new ProviderError("PROVIDER_FAILURE", "the computer did not come up");
      }
      const existing = registry.find(ref);
      if (existing) {
        existing.running = true;
        return { providerRef: existing.providerRef, fresh: false };
      }
      await fs.mkdir(options.homesDir, { recursive: true, mode: 0o700 });
      const homesDir = await fs.realpath(options.homesDir);
      const homePath = join(homesDir, ref.homeKey);
      await fs.mkdir(homePath, { mode: 0o700 }).catch((error: unknown) => {
        if (!(error instanceof Error && "code" in error && error.code === "EEXIST")) throw error;
      });
      const stats = await fs.lstat(homePath);
      if (!stats.isDirectory()) {
        throw new ProviderError("PROVIDER_FAILURE", `the home ${homePath} exists but is not a folder`);
      }
      const home = await fs.realpath(homePath);
      const roots = [home, ...(await Promise.all((options.allowedRoots ?? []).map(realRoot)))];
      const machine = registry.add(ref.homeKey, homesDir, { home, roots });
      return { providerRef: machine.providerRef, fresh: true };
    },

    async stop(ref) {
      await stopMachine(registry.require(ref));
    },

    async destroy(ref) {
      const machine = registry.find(ref);
      if (!machine) return;
      registry.forget(machine);
      await stopMachine(machine);
    },

    async status(ref) {
      const machine = registry.find(ref);
      if (!machine) return "missing";
      return machine.running ? "running" : "stopped";
    },

    async openScreen(ref, index): Promise<ScreenTarget> {
      requireGraphical();
      requireScreen(index);
      const screen = await screens.ensure(registry.requireRunning(ref), index);
      return { kind: "vnc", host: "127.0.0.1", port: screen.port, password: screen.password };
    },

    async openControl(ref, index, password): Promise<ScreenTarget> {
      checkControlPassword(password);
      requireGraphical();
      requireScreen(index);
      const control = await screens.openControl(registry.requireRunning(ref), index, password);
      return { kind: "vnc", host: "127.0.0.1", port: control.port, password: control.password };
    },

    async closeControl(ref, index) {
      requireGraphical();
      requireScreen(index);
      const machine = registry.require(ref);
      // a stopped computer's screens are gone, control servers included: nothing to close
      if (machine.running) await screens.closeControl(machine, index);
    },

    run,

    listFiles: async (ref, path) => listFiles(registry.require(ref).files, path),
    readFile: async (ref, path, { maxBytes }) => readFile(registry.require(ref).files, path, maxBytes),
    writeFile: async (ref, path, data, writeOptions) =>
      writeFile(registry.require(ref).files, path, data, writeOptions),
    deleteFile: async (ref, path) => deleteFile(registry.require(ref).files, path),

    exportHome: async (ref, exportOptions) =>
      exportHome(registry.require(ref), tools.tar, options.faults, exportOptions?.paths),
    listHome: async (ref) => listHome(registry.require(ref)),
    importHome: async (ref, tar) => importHome(registry.require(ref), tools.tar, tar, options.faults),

    settleBrowsers: async (ref) => settleBrowsers(registry.require(ref).files.home),
    closeBrowsers: async (ref) => closeBrowsers(registry.require(ref).files.home),

    async observe(ref, screen): Promise<Observation> {
      requireGraphical();
      requireScreen(screen);
      return screens.observe(registry.requireRunning(ref), screen);
    },

    async act(ref, screen, actions): Promise<ActResult> {
      const batch = validateActions(actions);
      requireGraphical();
      requireScreen(screen);
      return screens.act(registry.requireRunning(ref), screen, batch);
    },

    // commands run on the host's own display for screen 0; the others have no fixed numbering
    screenEnv: (screen) => (screen === 0 ? {} : null),
    launch: (ref, screen, request, launchOptions) =>
      launchByCommand(provider, apps, ref, screen, request, launchOptions),

    async shutdown() {
      await Promise.all(registry.all().map((machine) => stopMachine(machine)));
    },
  };
  return provider;
}
