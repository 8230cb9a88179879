import {
  EXIT_ABORTED,
  MAX_SCREENS,
  type MachineRef,
  machineStopped,
  OUTPUT_TRUNCATED_MARKER,
  ProviderError,
  type SandboxProvider,
} from "../contract/index.ts";
import { validateActions } from "../kernel/actions.ts";
import { checkControlPassword } from "../kernel/control-password.ts";
import { ALL_EGRESS_LEVELS, FULL_EGRESS_ALLOWLIST, requireEnforceable } from "../kernel/egress.ts";
import { breakAfterFirstChunk, type FaultPlan, truncateAfterFirstChunk } from "../kernel/faults.ts";
import { homeRelativePath } from "../kernel/home-path.ts";
import { type AppPrograms, launchByCommand } from "../kernel/launch.ts";
import { asProviderError, translated } from "./errors.ts";
import type { SupervisorClient } from "./supervisor/client.ts";

export interface DockerProviderOptions {
  supervisor: SupervisorClient;
  faults?: FaultPlan;
}

/**
 * Computers as containers on a Docker host, through that host's supervisor (the only process
 * with the Docker socket). The container id is the providerRef: a ref that no longer names the
 * home's container is a missing machine, so callers provision a replacement.
 */
export function createDockerProvider({ supervisor, faults }: DockerProviderOptions): SandboxProvider {
  const computer = (ref: MachineRef) => ({
    homeKey: ref.homeKey,
    computerId: ref.computerId,
    workspaceId: ref.workspaceId,
  });

  async function current(ref: MachineRef) {
    const status = await translated(() => supervisor.status(computer(ref)));
    const matches =
      status.status !== "missing" && ref.providerRef !== null && status.providerRef === ref.providerRef;
    return { status, matches };
  }

  async function requireMachine(ref: MachineRef, options: { running?: boolean } = {}) {
    const { status, matches } = await current(ref);
    if (!matches)
      throw new ProviderError("MACHINE_MISSING", `no machine ${ref.providerRef ?? "(none)"} for this home`);
    if (options.running && status.status !== "running") {
      throw machineStopped();
    }
    return status;
  }

  function requireScreen(index: number) {
    if (!Number.isInteger(index) || index < 0 || index >= MAX_SCREENS) {
      throw new ProviderError("INVALID_SCREEN", `screen ${index} is outside 0…${MAX_SCREENS - 1}`);
    }
  }

  const provider: SandboxProvider = {
    kind: "docker",
    // the supervisor's firewall rules on the computers' network enforce every level
    capabilities: {
      graphical: true,
      maxScreens: MAX_SCREENS,
      pty: false,
      egress: ALL_EGRESS_LEVELS,
      egressAllowlist: FULL_EGRESS_ALLOWLIST,
    },

    async verifyAccess() {
      // listing needs the bearer token, /health does not
      await translated(() => supervisor.list());
    },

    async provision(ref) {
      if (faults?.take("provision"))
        throw new ProviderError("PROVIDER_FAILURE", "the container did not come up");
      const { matches } = await current(ref);
      const created = await translated(() => supervisor.create(computer(ref)));
      // A different container than the one the caller knew is a new machine to them.
      return { providerRef: created.providerRef, fresh: created.fresh || !matches };
    },

    async stop(ref) {
      await requireMachine(ref);
      await translated(() => supervisor.stop(computer(ref)));
    },

    async destroy(ref) {
      const { matches } = await current(ref);
      if (matches) await translated(() => supervisor.destroy(computer(ref)));
    },

    async status(ref) {
      const { status, matches } = await current(ref);
      if (!matches) return "missing";
      return status?.status === "running" ? "running" : "stopped";
    },

    async setEgress(ref, policy) {
      requireEnforceable(provider.capabilities, policy);
      await requireMachine(ref);
      // the supervisor keeps it with the computer, so the container's later starts carry it too
      await translated(() => supervisor.setEgress(computer(ref), policy));
    },

    async egressReport(ref, after) {
      await requireMachine(ref);
      const { report } = await translated(() => supervisor.egress(computer(ref), after));
      return report;
    },

    async openScreen(ref, index) {
      requireScreen(index);
      await requireMachine(ref, { running: true });
      const screen = await translated(() => supervisor.openScreen(computer(ref), index));
      return { kind: "vnc", host: screen.host, port: screen.viewPort, password: screen.viewPassword };
    },

    async openControl(ref, index, password) {
      checkControlPassword(password);
      requireScreen(index);
      await requireMachine(ref, { running: true });
      // the computer keeps the server when it already runs with this password (control-open)
      const control = await translated(() => supervisor.openControl(computer(ref), index, password));
      return { kind: "vnc", host: control.host, port: control.controlPort, password };
    },

    async closeControl(ref, index) {
      requireScreen(index);
      // a stopped computer runs no servers: there is nothing to close
      if ((await requireMachine(ref)).status !== "running") return;
      try {
        await translated(() => supervisor.closeControl(computer(ref), index));
      } catch (error) {
        // stopped in the meantime: its servers went with it
        if (error instanceof ProviderError && error.code === "MACHINE_STOPPED") return;
        throw error;
      }
    },

    async *run(ref, request) {
      if (request.cwd !== undefined) homeRelativePath(request.cwd);
      await requireMachine(ref, { running: true });
      const { signal, ...exec } = request;
      let truncated = false;
      try {
        for await (const event of supervisor.exec(computer(ref), exec, signal ? { signal } : {})) {
          if (event.type === "stdout" && event.data.includes(OUTPUT_TRUNCATED_MARKER)) truncated = true;
          yield event;
        }
      } catch (error) {
        // Aborting closes the stream; the supervisor kills the command when its client goes away,
        // so the exit the stream can no longer carry is known: 130.
        if (signal?.aborted) {
          yield { type: "exit", code: EXIT_ABORTED, message: "command aborted", truncated };
          return;
        }
        throw asProviderError(error);
      }
    },

    async listFiles(ref, path) {
      const relative = homeRelativePath(path);
      await requireMachine(ref);
      return translated(() => supervisor.listFiles(computer(ref), relative));
    },

    async readFile(ref, path, { maxBytes }) {
      const relative = homeRelativePath(path);
      await requireMachine(ref);
      return translated(() => supervisor.readFile(computer(ref), relative, { maxBytes }));
    },

    async writeFile(ref, path, data, options) {
      const relative = homeRelativePath(path);
      await requireMachine(ref);
      await translated(() => supervisor.writeFile(computer(ref), relative, data, options));
    },

    async deleteFile(ref, path) {
      const relative = homeRelativePath(path);
      if (relative === "") throw new ProviderError("INVALID_PATH", "the home itself cannot be deleted");
      await requireMachine(ref);
      await translated(() => supervisor.deleteFile(computer(ref), relative));
    },

    async exportHome(ref, options) {
      const paths = options?.paths?.map((path) => homeRelativePath(path));
      await requireMachine(ref);
      const tar = await translated(() => supervisor.exportHome(computer(ref), paths ? { paths } : {}));
      return faults?.take("export") ? breakAfterFirstChunk(tar) : tar;
    },

    // a stopped computer is not listed (null): it is exported whole
    async listHome(ref) {
      await requireMachine(ref);
      return translated(() => supervisor.listHome(computer(ref)));
    },

    async importHome(ref, tar) {
      await requireMachine(ref);
      const body = faults?.take("import") ? truncateAfterFirstChunk(tar) : tar;
      await translated(() => supervisor.importHome(computer(ref), body));
    },

    // the supervisor returns at once for a stopped computer (it runs no browser)
    async settleBrowsers(ref) {
      await requireMachine(ref);
      await translated(() => supervisor.settleBrowsers(computer(ref)));
    },

    async closeBrowsers(ref) {
      await requireMachine(ref);
      await translated(() => supervisor.closeBrowsers(computer(ref)));
    },

    async observe(ref, screen) {
      requireScreen(screen);
      await requireMachine(ref, { running: true });
      return translated(() => supervisor.observe(computer(ref), screen));
    },

    async act(ref, screen, actions) {
      const batch = validateActions(actions);
      requireScreen(screen);
      await requireMachine(ref, { running: true });
      return translated(() => supervisor.act(computer(ref), screen, batch));
    },

    screenEnv: (screen) => dockerScreenEnv(screen),
    launch: (ref, screen, request, options) =>
      launchByCommand(provider, DOCKER_APPS, ref, screen, request, options),
  };
  return provider;
}

/** In the Docker computer screen i is display `:i+1` (computer-image/rootfs/opt/cubicle/lib.sh). */
export function dockerScreenEnv(screen: number): Record<string, string> | null {
  return Number.isInteger(screen) && screen >= 0 && screen < MAX_SCREENS
    ? { DISPLAY: `:${screen + 1}` }
    : null;
}

/** The computer image's programs: its Chromium wrapper keeps the profile in `.browser-profiles`. */
export const DOCKER_APPS: AppPrograms = {
  browser: { program: "/opt/cubicle/browser" },
  terminal: { program: "xterm" },
};
