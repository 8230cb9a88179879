/**
 * The provider contract (docs/architecture.md, "The provider contract"): the one interface every
 * place computers can run implements. The API talks to computers only through this; the shared
 * conformance and fault suites (providers/testing/suites/) hold every backend to the same behaviour.
 */

import type { EgressLevel, EgressPolicy, EgressReport } from "./egress.ts";
import type { ProviderKind } from "./kinds.ts";
import type { ActResult, CommandEvent, DesktopAction, FileEntry, Observation } from "./machine.ts";
import type { ScreenTarget } from "./screen-target.ts";

/** Which machine: the durable home key, plus the provider's own handle when one exists. */
export interface MachineRef {
  homeKey: string;
  /** The computer record and workspace it belongs to; providers label machines with them. */
  computerId: string;
  workspaceId: string;
  /** An acceleration path, not durable data: only reused by the same provider kind. */
  providerRef: string | null;
}

export interface Provisioned {
  providerRef: string;
  /** True when a new machine was made (its home may need restoring); false when reconnected. */
  fresh: boolean;
}

export type MachineStatus = "running" | "stopped" | "missing";

/** One entry of a home as `listHome` sees it. */
export interface HomeListingEntry {
  /** Home-relative; "." is the home itself. */
  path: string;
  type: "file" | "directory" | "symlink" | "other";
  /**
   * Device, inode, status change time, modification time, size and mode as the machine reports
   * them: equal stamps mean the entry was not written, replaced, renamed onto or chmod-ed since.
   * The change time is what makes it trustworthy: writing a file sets it to the kernel's clock,
   * and nobody in the machine can set it back (unlike the modification time, which `touch -d`,
   * `cp -p` and tar restore).
   */
  stamp: string;
  /** The status change time, in seconds since the epoch on the machine's clock. */
  changedAt: number;
  /** The modification time, in seconds since the epoch. */
  modifiedAt: number;
  /** Permission bits (setuid, setgid and sticky included). */
  mode: number;
  /** A symlink's target. */
  target?: string;
}

export interface HomeListing {
  /** The machine's clock when the listing began, in seconds since the epoch. */
  listedAt: number;
  entries: HomeListingEntry[];
}

export interface ProviderCapabilities {
  graphical: boolean;
  maxScreens: number;
  pty: boolean;
  /** The egress levels this backend enforces; `setEgress` refuses the others (EGRESS_UNSUPPORTED). */
  egress: readonly EgressLevel[];
  /**
   * What an `allowlist` policy may hold here, where `egress` lists it (a vendor's network rules
   * may lack ports, or take only a few entries); `setEgress` refuses more (EGRESS_UNSUPPORTED).
   */
  egressAllowlist?: EgressAllowlistLimits;
}

export interface EgressAllowlistLimits {
  /** Whether a destination may be narrowed to ports; without, each allows every port. */
  ports: boolean;
  maxDestinations: number;
}

/**
 * How long `settleBrowsers` waits while a Chromium runs: Chromium keeps cookies in memory and
 * writes its Cookies database from a timer that fires 30 s after the first unwritten change (there
 * is no flush to ask for), so 30 s plus a second's margin for the write itself. The Docker
 * computer's `/opt/cubicle/browsers settle` waits the same (BROWSER_SETTLE_SECONDS in its lib.sh).
 */
export const BROWSER_SETTLE_MS = 31_000;

/** How long a browser gets to write its profile and exit after SIGTERM before it is killed. */
export const BROWSER_CLOSE_GRACE_MS = 10_000;

/** VNC authentication uses at most 8 characters; control passwords are 1 to 8 printable ASCII ones. */
export const CONTROL_PASSWORD = /^[\x21-\x7e]{1,8}$/;

export interface CommandRequest {
  command: string;
  /** Relative to the home; defaults to the home itself. */
  cwd?: string;
  env?: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
  /** stdout and stderr together; past it output is dropped and a marker is emitted once. */
  maxOutputBytes?: number;
}

/** Apps every graphical machine can start on a screen. */
export const APP_NAMES = ["browser", "terminal"] as const;
export type AppName = (typeof APP_NAMES)[number];

/**
 * What `launch` starts on a screen: an app; a URL, in the browser; or a home-relative path — a
 * folder in a terminal started in it, a file in the browser.
 */
export type LaunchRequest =
  | { kind: "app"; app: AppName }
  | { kind: "url"; url: string }
  | { kind: "path"; path: string };

export interface LaunchOptions {
  /** Home-relative folder the app starts in ("" is the home). */
  cwd: string;
  /**
   * Home-relative folder the browser takes as its HOME, so its profile lives there: on a Team
   * Computer each bot's browser keeps its own profile under `bots/<bot id>/` (Chromium runs one
   * instance per profile, and a shared one would open every bot's window on one screen).
   */
  browserHome?: string;
}

export interface Launched {
  /** The app that was started. */
  app: AppName;
  /** The screen's X display as commands on the machine see it, when the backend has one. */
  display: string | null;
}

export interface SandboxProvider {
  readonly kind: ProviderKind;
  readonly capabilities: ProviderCapabilities;

  /**
   * Proves the backend takes Cubicle's credentials with one cheap call (`cubicle doctor`): a
   * vendor reports the selected provider in /health whether or not its key is good, so only a call
   * tells. PROVIDER_AUTH_FAILED when the credential is refused, PROVIDER_FAILURE when the backend
   * does not answer; resolves at once for backends without a credential.
   */
  verifyAccess(): Promise<void>;

  /** Create the machine, or reconnect to `ref.providerRef` when it still exists. */
  provision(ref: MachineRef): Promise<Provisioned>;
  /** Suspend; idempotent. */
  stop(ref: MachineRef): Promise<void>;
  destroy(ref: MachineRef): Promise<void>;
  status(ref: MachineRef): Promise<MachineStatus>;
  keepAlive?(ref: MachineRef): Promise<void>;

  /** The screen's view-only VNC target (started as needed); input sent to it is ignored. */
  openScreen(ref: MachineRef, index: number): Promise<ScreenTarget>;
  /**
   * Starts (or keeps) the screen's input-accepting VNC server with this password and returns its
   * target. Idempotent: called again with the same password while it runs, it returns the same
   * target without restarting (live control connections stay up). A different password replaces
   * the server (connections drop). `password` must match CONTROL_PASSWORD (INVALID_PASSWORD).
   */
  openControl(ref: MachineRef, index: number, password: string): Promise<ScreenTarget>;
  /** Stops the screen's control server; every control connection drops. Idempotent. */
  closeControl(ref: MachineRef, index: number): Promise<void>;

  run(ref: MachineRef, request: CommandRequest): AsyncIterable<CommandEvent>;

  listFiles(ref: MachineRef, path: string): Promise<FileEntry[]>;
  /** Fails with FILE_TOO_LARGE, never a partial read, when the file exceeds `maxBytes`. */
  readFile(ref: MachineRef, path: string, options: { maxBytes: number }): Promise<Uint8Array>;
  writeFile(
    ref: MachineRef,
    path: string,
    data: Uint8Array,
    options?: { executable?: boolean },
  ): Promise<void>;
  deleteFile(ref: MachineRef, path: string): Promise<void>;

  /**
   * The whole home as a tar stream (paths relative to the home). With `paths` (home-relative,
   * "." the home itself), only those entries, each alone (a folder without its contents); one
   * gone meanwhile is left out.
   */
  exportHome(ref: MachineRef, options?: { paths?: readonly string[] }): Promise<ReadableStream<Uint8Array>>;
  /**
   * Every entry of the home now with its stamp (HomeListing), for an export of only what may have
   * changed (`exportHome` with `paths`, which a backend with `listHome` supports); null when the
   * machine cannot be listed now (the caller exports the whole home instead). Backends without it
   * are always exported whole.
   */
  listHome?(ref: MachineRef): Promise<HomeListing | null>;
  /**
   * Replace the home's contents with the tar stream's, atomically: on failure the old contents
   * stay. Once the archive is extracted, and before anything is swapped, the machine's browsers are
   * closed as `closeBrowsers` closes them (their whole profile written; they stay closed): one left
   * running would write its profile into the home during the swap and, after it, its old state into
   * the new one, a mix of both. An archive refused or broken before that leaves the browsers
   * running. The swap moves entries by renames only, so another program writing in the home cannot
   * make it fail. Remote providers give the same guarantee through this contract.
   */
  importHome(ref: MachineRef, tar: ReadableStream<Uint8Array>): Promise<void>;

  /**
   * Waits until the browsers running on the machine have written out what they keep in memory,
   * without stopping them (another bot may be mid-task in one): an `exportHome` after it holds
   * every browser change (cookies included) made before the call. Chromium cannot be asked to
   * flush, so while one runs this takes BROWSER_SETTLE_MS; with none running (or the machine
   * stopped) it returns at once. Remote providers give the same guarantee through this contract.
   * MACHINE_MISSING for an unknown machine.
   */
  settleBrowsers(ref: MachineRef): Promise<void>;
  /**
   * Closes every browser on the machine so that it writes its whole profile, cookies included
   * (Chromium sent only SIGTERM drops the cookies it has not written: quit it normally, or settle
   * it first; SIGKILL only after BROWSER_CLOSE_GRACE_MS) and waits until they have exited. They stay
   * closed: nothing the machine runs restarts them (a bot may start a new one). Idempotent; with
   * no browser running (or the machine stopped) it returns at once. Stopping a machine closes its
   * browsers the same way first. Remote providers give the same guarantee through this contract.
   * MACHINE_MISSING for an unknown machine.
   */
  closeBrowsers(ref: MachineRef): Promise<void>;

  /**
   * The environment a command needs for the graphical programs it starts to appear on `screen`
   * (`DISPLAY`); `{}` when the command's default display is that screen; null when commands
   * cannot target it.
   */
  screenEnv(screen: number): Record<string, string> | null;
  /**
   * Starts an app, a URL or a path on `screen`, detached: it returns once the program started and
   * the program outlives the call. The screen's servers are started as needed. A screen commands
   * cannot target → MULTI_SCREEN_UNAVAILABLE; a program that fails to start → APP_LAUNCH_FAILED
   * with what it said; a path outside the home → PATH_OUTSIDE_HOME; a missing one → FILE_NOT_FOUND.
   */
  launch(ref: MachineRef, screen: number, request: LaunchRequest, options: LaunchOptions): Promise<Launched>;

  /**
   * Applies an egress policy to the machine now, running or stopped, within seconds and without a
   * restart; it holds for the machine's later starts until another is set. Idempotent. A level
   * outside `capabilities.egress` → EGRESS_UNSUPPORTED, and the machine keeps its policy.
   * MACHINE_MISSING for an unknown machine.
   */
  setEgress(ref: MachineRef, policy: EgressPolicy): Promise<void>;
  /**
   * What the machine's policy refused after `after` (null: from the oldest kept), for backends
   * that observe refusals; the others leave it out.
   */
  egressReport?(ref: MachineRef, after: string | null): Promise<EgressReport>;

  observe(ref: MachineRef, screen: number): Promise<Observation>;
  act(ref: MachineRef, screen: number, actions: DesktopAction[]): Promise<ActResult>;
}
