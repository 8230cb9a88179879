import { isDeepStrictEqual } from "node:util";
import { containerRunner, type FirewallRunner, localRunner } from "@cubicle/host/firewall-runner";
import { ensureHostFirewall, hostFirewallActive } from "@cubicle/host/host-firewall";
import { type Iptables, iptablesOf } from "@cubicle/host/iptables";
import { KeyedLock } from "@cubicle/host/keyed-lock";
import {
  type ActResult,
  type CommandEvent,
  type DesktopAction,
  type EgressPolicy,
  type EgressReport,
  type HomeListing,
  MAX_SCREENS,
  type Observation,
} from "@cubicle/providers/contract";
import { byName } from "@cubicle/providers/kernel";
import type {
  ComputerStatus,
  ComputerSummary,
  ControlInfo,
  CreateResult,
  Diagnosis,
  ExecRequest,
  Health,
  ScreenInfo,
} from "@cubicle/providers/supervisor-wire";
import Docker from "dockerode";
import type { DockerConfig, SupervisorConfig } from "../../config.ts";
import { EgressEnforcer } from "../../egress/enforcer.ts";
import { ensureHome } from "../../homes.ts";
import { computerNotFound, SupervisorProblem } from "../../problems.ts";
import type { ComputerRef, ContainerManager, OpenedPath } from "../manager.ts";
import * as archive from "./archive.ts";
import { startCommand } from "./commands.ts";
import { diagnose } from "./diagnosis.ts";
import { dockerFailure, dockerStatus } from "./errors.ts";
import { checkedExec } from "./exec.ts";
import { deletePath, openPath, resolveCwd, sweepUploads, writeFile } from "./files.ts";
import {
  belongsTo,
  findComputer,
  inspectByHomeKey,
  isManaged,
  isRunning,
  runningComputer,
  waitUntilReady,
  watchBoot,
} from "./machines.ts";
import { addressOf, bridgeOf, ensureNetwork, subnetOf } from "./network.ts";
import * as screens from "./screens.ts";
import { containerName, containerSpec, hostPorts, LABEL } from "./spec.ts";

/**
 * How long `docker stop` waits before SIGKILL. The entry point closes the browsers on SIGTERM
 * (`close_browsers` in the image's lib.sh: up to 10 s before it kills one), so that Chromium writes
 * its profile, cookies included, instead of losing what it had not written yet.
 */
const STOP_TIMEOUT_SECONDS = 20;

/** `/opt/cubicle/browsers settle` waits 31 s; close can take 10 s and more under load. */
const BROWSERS_TIMEOUT_MS = 90_000;

function assertScreen(index: number): void {
  if (!Number.isInteger(index) || index < 0 || index >= MAX_SCREENS) {
    throw new SupervisorProblem(
      "SCREEN_OUT_OF_RANGE",
      `a Docker computer has ${MAX_SCREENS} screens (0-${MAX_SCREENS - 1}); screen ${index} is not available`,
    );
  }
}

/**
 * The Docker manager for `config`: the firewall programs run on this machine, or in
 * SUPERVISOR_FIREWALL_CONTAINER; the computers' DNS servers, unless SUPERVISOR_DNS names them, are
 * the host's as seen where those programs run.
 */
export async function dockerManager(
  config: SupervisorConfig,
  docker: Docker = new Docker(),
): Promise<DockerContainerManager> {
  const runner = config.firewallContainer ? containerRunner(docker, config.firewallContainer) : localRunner;
  const dns = config.dns ?? (await runner.nameservers());
  return new DockerContainerManager(
    { ...config, dns },
    docker,
    config.hostFirewall === "auto" ? runner : null,
  );
}

/** Computers as Docker containers on this engine (docs/architecture.md, "The Docker computer"). */
export class DockerContainerManager implements ContainerManager {
  private readonly locks = new KeyedLock();
  private readonly egressEnforcer: EgressEnforcer;
  private readonly firewall: Iptables | null;
  private reattached = false;
  /**
   * The policy each running computer's rules were last made from by this process, and for which
   * address. The api sets the policy after every start, which has just made the stored one's
   * rules: the same policy again (the usual case) changes no rule, so it is not made again (eight
   * iptables runs, 0.2-0.8 s). A restart forgets this, which only costs making the rules again.
   */
  private readonly enforced = new Map<string, { address: string; policy: EgressPolicy }>();

  constructor(
    private readonly config: DockerConfig,
    private readonly docker: Docker,
    /** Null when the supervisor may not touch the host's firewall (SUPERVISOR_HOST_FIREWALL=off). */
    runner: FirewallRunner | null,
  ) {
    this.firewall = runner && iptablesOf(runner);
    this.egressEnforcer = new EgressEnforcer(config.dataDir, config.dns, runner);
  }

  /**
   * The network, the host firewall rule and the egress chain; also done by `create` (the engine
   * may have been down at start). The first time, this supervisor's running computers get their
   * policies again (addresses may have changed while it was away).
   */
  async prepare(): Promise<void> {
    await ensureNetwork(this.docker, this.config.network);
    if (!this.firewall) return;
    const bridge = await bridgeOf(this.docker, this.config.network);
    const subnet = await subnetOf(this.docker, this.config.network);
    if (!bridge || !subnet) return;
    await ensureHostFirewall(this.firewall, bridge);
    if (!(await this.egressEnforcer.prepare(bridge, subnet)) || this.reattached) return;
    this.reattached = true;
    for (const computer of await this.list()) {
      if (computer.status !== "running") continue;
      const ref = {
        homeKey: computer.homeKey,
        computerId: computer.computerId,
        workspaceId: computer.workspaceId,
      };
      await this.locks.run(ref.homeKey, async () => {
        const found = await inspectByHomeKey(this.docker, ref.homeKey);
        // computers of another supervisor on this engine keep that one's policies
        if (found && isRunning(found.info) && this.ownsHome(found.info))
          await this.attachEgress(ref, found.info);
      });
    }
    await this.egressEnforcer.sweep(async (homeKey) => {
      const found = await inspectByHomeKey(this.docker, homeKey);
      return found && isRunning(found.info) ? addressOf(found.info, this.config.network) : null;
    });
  }

  /** Whether the computer's home is in this supervisor's DATA_DIR (several may share one engine). */
  private ownsHome(info: Docker.ContainerInspectInfo): boolean {
    return (info.Mounts ?? []).some((mount) => mount.Source.startsWith(`${this.config.homesDir}/`));
  }

  /** Enforces the computer's policy for the address it has now (it changes across restarts). */
  private async attachEgress(ref: ComputerRef, info: Docker.ContainerInspectInfo): Promise<void> {
    const address = addressOf(info, this.config.network);
    if (!address)
      throw new SupervisorProblem(
        "DOCKER_FAILURE",
        `computer ${ref.homeKey} has no address on ${this.config.network}`,
      );
    this.enforced.delete(ref.homeKey);
    await this.egressEnforcer.attach(ref, address);
    if (this.egressEnforcer.problem() === null)
      this.enforced.set(ref.homeKey, { address, policy: await this.egressEnforcer.policyOf(ref.homeKey) });
  }

  async close(): Promise<void> {
    this.egressEnforcer.close();
  }

  private async imageId(): Promise<string | null> {
    try {
      return (await this.docker.getImage(this.config.image).inspect()).Id;
    } catch (error) {
      if (dockerStatus(error) === 404) return null;
      throw dockerFailure(`inspecting image ${this.config.image} failed`, error);
    }
  }

  async health(): Promise<Health> {
    const image = { ref: this.config.image, id: null as string | null };
    try {
      await this.docker.ping();
      image.id = await this.imageId();
    } catch {
      return {
        ok: false,
        docker: "unreachable",
        image,
        hostFirewall: "off",
        egress: "off",
        egressProblem: "the Docker engine does not answer",
      };
    }
    const bridge = await bridgeOf(this.docker, this.config.network);
    const firewall = this.firewall;
    const egress = bridge && (await this.egressEnforcer.active(bridge)) ? "on" : "off";
    const egressProblem = this.egressEnforcer.problem();
    return {
      ok: image.id !== null,
      docker: "ok",
      image,
      hostFirewall: bridge && firewall && (await hostFirewallActive(firewall, bridge)) ? "on" : "off",
      egress,
      ...(egress === "off"
        ? { egressProblem: egressProblem ?? "the supervisor's chain is not hooked on the computers' bridge" }
        : {}),
    };
  }

  async diagnose(): Promise<Diagnosis> {
    return diagnose(this.docker, this.config, await this.health());
  }

  create(ref: ComputerRef): Promise<CreateResult> {
    return this.locks.run(ref.homeKey, async () => {
      const imageId = await this.imageId();
      if (!imageId) {
        throw new SupervisorProblem(
          "IMAGE_MISSING",
          `the computer image ${this.config.image} is not on this Docker engine; build it first`,
        );
      }
      const home = await ensureHome(this.config.homesDir, ref.homeKey);
      await this.prepare();
      let found = await inspectByHomeKey(this.docker, ref.homeKey);
      if (found && !isManaged(found.info)) {
        throw new SupervisorProblem(
          "NAME_CONFLICT",
          `a container named ${containerName(ref.homeKey)} exists that the supervisor did not make`,
        );
      }
      const spec = containerSpec(this.config, ref, imageId, home.path);
      // made for another computer record, from an older image or with other settings: replace it
      // (the home stays)
      if (
        found &&
        (!belongsTo(found.info, ref) || found.info.Config.Labels?.[LABEL.spec] !== spec.Labels[LABEL.spec])
      ) {
        await this.remove(found.container);
        found = null;
      }
      if (found) {
        try {
          if (found.info.State.Running) {
            if (found.info.State.Paused) await this.unpause(found.container);
            await this.attachEgress(ref, await found.container.inspect());
            await waitUntilReady(found.container);
          } else {
            // a computer that was not running may have been killed mid-upload
            await this.start(found.container, ref, { sweep: true });
          }
          return { providerRef: found.info.Id, fresh: false, homeCreated: home.created, state: "running" };
        } catch (error) {
          // a container that no longer boots is replaced; its home is all that matters
          if (!(error instanceof SupervisorProblem && error.code === "COMPUTER_FAILURE")) throw error;
          await this.remove(found.container);
        }
      }
      // a home made just now holds no upload cut short
      const sweep = !home.created;
      const container = await this.boot(spec, ref, sweep).catch(async (error: unknown) => {
        // one more try: a first boot can miss the image's start-up deadlines on a busy host
        if (!(error instanceof SupervisorProblem && error.code === "COMPUTER_FAILURE")) throw error;
        return this.boot(spec, ref, sweep);
      });
      return { providerRef: container.id, fresh: true, homeCreated: home.created, state: "running" };
    });
  }

  /** Makes and starts a new container and waits for it to boot; one that fails is removed. */
  private async boot(
    spec: Docker.ContainerCreateOptions,
    ref: ComputerRef,
    sweep: boolean,
  ): Promise<Docker.Container> {
    let container: Docker.Container;
    try {
      container = await this.docker.createContainer(spec);
    } catch (error) {
      throw dockerFailure(`creating computer ${ref.homeKey} failed`, error);
    }
    try {
      await this.start(container, ref, { sweep });
      return container;
    } catch (error) {
      await this.remove(container).catch(() => undefined);
      throw dockerFailure(`starting computer ${ref.homeKey} failed`, error);
    }
  }

  /**
   * Starts a stopped container and returns once it has booted with its egress policy enforced.
   * While it boots, its rules are made and (with `sweep`) uploads a killed computer left half
   * written are removed from its home: none of that waits for the screen, nor the screen for it.
   */
  private async start(container: Docker.Container, ref: ComputerRef, { sweep }: { sweep: boolean }) {
    const boot = await watchBoot(container);
    try {
      try {
        await container.start();
      } catch (error) {
        // 304: started by another caller meanwhile, perhaps booted before we listened
        if (dockerStatus(error) !== 304) throw dockerFailure("starting the computer failed", error);
        await this.attachEgress(ref, await container.inspect());
        await waitUntilReady(container);
        if (sweep) await sweepUploads(container);
        return;
      }
      await Promise.all([
        container.inspect().then((info) => this.attachEgress(ref, info)),
        boot.ready,
        sweep ? sweepUploads(container) : undefined,
      ]);
    } finally {
      boot.close();
    }
  }

  private async unpause(container: Docker.Container): Promise<void> {
    try {
      await container.unpause();
    } catch (error) {
      // 304 / 409: it was not paused (any more)
      if (dockerStatus(error) !== 304 && dockerStatus(error) !== 409)
        throw dockerFailure("resuming the computer failed", error);
    }
  }

  private async remove(container: Docker.Container): Promise<boolean> {
    try {
      await container.remove({ force: true, v: true });
      return true;
    } catch (error) {
      if (dockerStatus(error) === 404) return false;
      // 409: removal already in progress
      if (dockerStatus(error) === 409) return true;
      throw dockerFailure("removing the computer failed", error);
    }
  }

  async status(ref: ComputerRef): Promise<ComputerStatus> {
    const found = await inspectByHomeKey(this.docker, ref.homeKey);
    if (!found) return { homeKey: ref.homeKey, status: "missing", providerRef: null, screens: [], ports: {} };
    if (!belongsTo(found.info, ref)) throw computerNotFound(ref.homeKey);
    if (!isRunning(found.info)) {
      return { homeKey: ref.homeKey, status: "stopped", providerRef: found.info.Id, screens: [], ports: {} };
    }
    const ports = hostPorts(found.info, this.config.screenHost);
    const running = await screens
      .screensOf(found.container, (port) => ports[String(port)] ?? null)
      .catch((error: unknown) => {
        // it stopped while we looked
        if (error instanceof SupervisorProblem && error.code === "COMPUTER_STOPPED") return null;
        throw error;
      });
    if (running === null) {
      return { homeKey: ref.homeKey, status: "stopped", providerRef: found.info.Id, screens: [], ports: {} };
    }
    return { homeKey: ref.homeKey, status: "running", providerRef: found.info.Id, screens: running, ports };
  }

  async list(): Promise<ComputerSummary[]> {
    let containers: Docker.ContainerInfo[];
    let imageId: string | null;
    try {
      containers = await this.docker.listContainers({
        all: true,
        filters: { label: [`${LABEL.managed}=true`] },
      });
      imageId = await this.imageId();
    } catch (error) {
      throw dockerFailure("listing computers failed", error);
    }
    return containers
      .map((c) => ({
        name: (c.Names[0] ?? "").replace(/^\//, ""),
        homeKey: c.Labels[LABEL.homeKey] ?? "",
        computerId: c.Labels[LABEL.computerId] ?? "",
        workspaceId: c.Labels[LABEL.workspaceId] ?? "",
        providerRef: c.Id,
        status: c.State === "running" ? ("running" as const) : ("stopped" as const),
        imageCurrent: imageId !== null && c.Labels[LABEL.image] === imageId,
      }))
      .sort(byName);
  }

  stop(ref: ComputerRef): Promise<void> {
    return this.locks.run(ref.homeKey, async () => {
      const { container, info } = await findComputer(this.docker, ref);
      if (!info.State.Running && !info.State.Paused) return;
      try {
        await container.stop({ t: STOP_TIMEOUT_SECONDS });
      } catch (error) {
        // 304: already stopped
        if (dockerStatus(error) !== 304)
          throw dockerFailure(`stopping computer ${ref.homeKey} failed`, error);
      }
      this.enforced.delete(ref.homeKey);
      await this.egressEnforcer.detach(ref.homeKey);
    });
  }

  destroy(ref: ComputerRef): Promise<boolean> {
    return this.locks.run(ref.homeKey, async () => {
      const found = await inspectByHomeKey(this.docker, ref.homeKey);
      if (!found) return false;
      // never remove another computer's container
      if (!belongsTo(found.info, ref)) throw computerNotFound(ref.homeKey);
      const removed = await this.remove(found.container);
      this.enforced.delete(ref.homeKey);
      await this.egressEnforcer.forget(ref.homeKey);
      return removed;
    });
  }

  async reconcile(keep: ReadonlySet<string>): Promise<string[]> {
    const removed: string[] = [];
    for (const computer of await this.list()) {
      if (keep.has(computer.homeKey)) continue;
      const gone = await this.locks.run(computer.homeKey, async () => {
        const removed = await this.remove(this.docker.getContainer(computer.providerRef));
        this.enforced.delete(computer.homeKey);
        await this.egressEnforcer.forget(computer.homeKey);
        return removed;
      });
      if (gone) removed.push(computer.name);
    }
    return removed;
  }

  setEgress(ref: ComputerRef, policy: EgressPolicy): Promise<void> {
    return this.locks.run(ref.homeKey, async () => {
      // the chains are checked at start and by every create (the api sets a policy right after
      // one): only a supervisor that could not make them yet tries again here
      if (this.egressEnforcer.problem() !== null) await this.prepare();
      const found = await inspectByHomeKey(this.docker, ref.homeKey);
      if (found && !belongsTo(found.info, ref)) throw computerNotFound(ref.homeKey);
      const address = found && isRunning(found.info) ? addressOf(found.info, this.config.network) : null;
      const known = this.enforced.get(ref.homeKey);
      const enforcing = this.egressEnforcer.problem() === null;
      if (enforcing && address && known?.address === address && isDeepStrictEqual(known.policy, policy))
        return;
      this.enforced.delete(ref.homeKey);
      await this.egressEnforcer.set(ref, policy, address);
      if (enforcing && address) this.enforced.set(ref.homeKey, { address, policy });
    });
  }

  async egress(
    ref: ComputerRef,
    after: string | null,
  ): Promise<{ policy: EgressPolicy; report: EgressReport }> {
    const found = await inspectByHomeKey(this.docker, ref.homeKey);
    if (found && !belongsTo(found.info, ref)) throw computerNotFound(ref.homeKey);
    return this.egressEnforcer.report(ref.homeKey, after);
  }

  async exec(
    ref: ComputerRef,
    request: ExecRequest,
    signal: AbortSignal,
  ): Promise<AsyncIterable<CommandEvent>> {
    const { container } = await runningComputer(this.docker, ref);
    const cwd = await resolveCwd(container, request.cwd);
    return startCommand({ container, cwd, request, signal });
  }

  async openPath(
    ref: ComputerRef,
    path: string,
    options: { maxBytes: number; expect?: "file" | "directory" },
  ): Promise<OpenedPath> {
    const { container } = await runningComputer(this.docker, ref);
    return openPath(container, path, options);
  }

  async writeFile(
    ref: ComputerRef,
    path: string,
    body: ReadableStream<Uint8Array>,
    options: { size: number; executable: boolean },
  ): Promise<void> {
    const { container } = await runningComputer(this.docker, ref);
    await writeFile(container, path, body, options);
  }

  async deleteFile(ref: ComputerRef, path: string): Promise<void> {
    const { container } = await runningComputer(this.docker, ref);
    await deletePath(container, path);
  }

  async exportHome(
    ref: ComputerRef,
    options: { paths?: readonly string[] } = {},
  ): Promise<ReadableStream<Uint8Array>> {
    // a stopped computer's home is read through the archive API (checkpoints of stopped computers)
    const { container, info } = await findComputer(this.docker, ref);
    return archive.exportHome(container, isRunning(info), options.paths);
  }

  async listHome(ref: ComputerRef): Promise<HomeListing | null> {
    const { container, info } = await findComputer(this.docker, ref);
    if (!isRunning(info)) return null;
    try {
      return await archive.listHome(container);
    } catch (error) {
      // stopped meanwhile: exported whole, as a stopped computer is
      const after = await inspectByHomeKey(this.docker, ref.homeKey).catch(() => null);
      if (after && !isRunning(after.info)) return null;
      throw error;
    }
  }

  async importHome(ref: ComputerRef, tar: ReadableStream<Uint8Array>): Promise<void> {
    const { container } = await runningComputer(this.docker, ref);
    await archive.importHome(container, tar);
  }

  settleBrowsers(ref: ComputerRef): Promise<void> {
    return this.browsers(ref, "settle");
  }

  closeBrowsers(ref: ComputerRef): Promise<void> {
    return this.browsers(ref, "close");
  }

  /** `/opt/cubicle/browsers settle|close` in the computer; a stopped computer runs no browser. */
  private async browsers(ref: ComputerRef, what: "settle" | "close"): Promise<void> {
    const { container, info } = await findComputer(this.docker, ref);
    if (!isRunning(info)) return;
    try {
      await checkedExec(
        container,
        what === "settle" ? "settling the browsers" : "closing the browsers",
        ["/opt/cubicle/browsers", what],
        { timeoutMs: BROWSERS_TIMEOUT_MS },
      );
    } catch (error) {
      // stopped meanwhile: the entry point closed the browsers on its way out
      const after = await inspectByHomeKey(this.docker, ref.homeKey).catch(() => null);
      if (after && !isRunning(after.info)) return;
      throw error;
    }
  }

  private async screenComputer(ref: ComputerRef, index: number) {
    assertScreen(index);
    const found = await runningComputer(this.docker, ref);
    const ports = hostPorts(found.info, this.config.screenHost);
    const hostPort = (port: number) => {
      const published = ports[String(port)];
      if (published === undefined) {
        throw new SupervisorProblem(
          "DOCKER_FAILURE",
          `container port ${port} of ${ref.homeKey} is not published`,
        );
      }
      return published;
    };
    return { container: found.container, hostPort };
  }

  async openScreen(ref: ComputerRef, index: number): Promise<ScreenInfo> {
    const { container, hostPort } = await this.screenComputer(ref, index);
    const viewPassword = await screens.ensureScreen(container, index);
    return {
      index,
      display: screens.displayOf(index),
      host: this.config.screenHost,
      viewPort: hostPort(screens.viewPortOf(index)),
      viewPassword,
    };
  }

  async closeScreen(ref: ComputerRef, index: number): Promise<void> {
    const { container } = await this.screenComputer(ref, index);
    if (index === 0) {
      throw new SupervisorProblem(
        "SCREEN_PERMANENT",
        "screen 0 runs as long as the computer; stop the computer instead",
      );
    }
    await screens.stopScreen(container, index);
  }

  async openControl(ref: ComputerRef, index: number, password: string): Promise<ControlInfo> {
    const { container, hostPort } = await this.screenComputer(ref, index);
    await screens.ensureScreen(container, index);
    await screens.openControl(container, index, password);
    return { index, host: this.config.screenHost, controlPort: hostPort(screens.controlPortOf(index)) };
  }

  async closeControl(ref: ComputerRef, index: number): Promise<void> {
    const { container } = await this.screenComputer(ref, index);
    await screens.closeControl(container, index);
  }

  async observe(ref: ComputerRef, index: number): Promise<Observation> {
    const { container } = await this.screenComputer(ref, index);
    return screens.observe(container, index);
  }

  async act(ref: ComputerRef, index: number, actions: DesktopAction[]): Promise<ActResult> {
    const { container } = await this.screenComputer(ref, index);
    return screens.act(container, index, actions);
  }
}
