/**
 * The supervisor's wire contract: the shapes its routes answer with and its client returns, and
 * the operations both sides share. Types and constants only. It lives under the Docker backend,
 * which calls the supervisor; the supervisor (a package above this one) implements it. The machine
 * vocabulary these shapes carry (command events, files, actions) is the providers' contract,
 * shared with every other backend.
 */

import type { ActResult, DesktopAction, HomeListing, Observation } from "../../contract/index.ts";

export const DEFAULT_SUPERVISOR_PORT = 7091;

/** Which computer a call is about, besides the home key in the path; checked against container labels. */
export interface ComputerIdentity {
  computerId: string;
  workspaceId: string;
}

/** A computer as callers name it: its home key plus the identity it was created with. */
export interface ComputerRef extends ComputerIdentity {
  homeKey: string;
}

export const COMPUTER_ID_HEADER = "x-cubicle-computer-id";
export const WORKSPACE_ID_HEADER = "x-cubicle-workspace-id";

export type ComputerState = "running" | "stopped" | "missing";

export interface Health {
  ok: boolean;
  docker: "ok" | "unreachable";
  image: { ref: string; id: string | null };
  /** Whether new computers' traffic to the host itself is dropped (see README "Network"). */
  hostFirewall: "on" | "off";
  /** Whether computers' egress policies are enforced (the supervisor's chain is hooked on their bridge). */
  egress: "on" | "off";
  /** When egress is off: why, and what to do about it. */
  egressProblem?: string;
}

export interface CreateResult {
  /** The container id. */
  providerRef: string;
  /** True when a new container was made; false when an existing one was resumed. */
  fresh: boolean;
  /** True when the home folder did not exist before this call (so it is empty). */
  homeCreated: boolean;
  state: "running";
}

export interface ScreenStatus {
  index: number;
  display: string;
  /** Host port of the view-only VNC server (127.0.0.1), null while it is not listening. */
  viewPort: number | null;
  /** Whether a control VNC server runs on this screen. */
  control: boolean;
  controlPort: number | null;
}

export interface ComputerStatus {
  homeKey: string;
  status: ComputerState;
  providerRef: string | null;
  /** Screens whose view server runs (read with `ps` inside the container). */
  screens: ScreenStatus[];
  /** Container port → host port on 127.0.0.1; empty unless running. */
  ports: Record<string, number>;
}

export interface ComputerSummary {
  name: string;
  homeKey: string;
  computerId: string;
  workspaceId: string;
  providerRef: string;
  status: Exclude<ComputerState, "missing">;
  /** False when the container was made from an older image and will be recreated on next create. */
  imageCurrent: boolean;
}

export interface ExecRequest {
  command: string;
  /** Relative to the home; defaults to the home. */
  cwd?: string;
  env?: Record<string, string>;
  timeoutMs: number;
  /** stdout and stderr together; past it output is dropped and a marker is emitted once. */
  maxOutputBytes?: number;
}

/** `POST …/archive`: only these home entries (home-relative, "" the home), each alone. */
export interface ArchiveRequest {
  paths: string[];
}

/** `GET …/home-listing`: every home entry with its stamp; null while the computer is stopped. */
export interface HomeListingResult {
  listing: HomeListing | null;
}

export interface ScreenInfo {
  index: number;
  /** X display inside the container, e.g. ":1". */
  display: string;
  /** The address the screen's ports are published on (SUPERVISOR_SCREEN_HOST). */
  host: string;
  /** Port on `host` of the view-only VNC server. */
  viewPort: number;
  viewPassword: string;
}

export interface ControlInfo {
  index: number;
  host: string;
  /** Port on `host` of the control VNC server. */
  controlPort: number;
}

export interface ReconcileResult {
  /** Names of the containers removed. */
  removed: string[];
}

/** One of this supervisor's computers, held against the spec it makes computers with. */
export interface ComputerCheck {
  name: string;
  homeKey: string;
  status: Exclude<ComputerState, "missing">;
  /** False when made from an image the tag no longer names (replaced at its next start). */
  imageCurrent: boolean;
  /** False when made with other settings than today's (replaced at its next start). */
  settingsCurrent: boolean;
  /** How it departs from the spec (root, capabilities, shared memory, ports…); empty when it meets it. */
  problems: string[];
}

/** What only the holder of the Docker socket can see, for `cubicle doctor`. */
export interface Diagnosis {
  health: Health;
  /**
   * The computer image's `cubicle.image.version` label, and the version of the image's sources
   * this supervisor was shipped with: different means the image was built from other sources.
   */
  imageVersion: { built: string | null; expected: string | null };
  /**
   * Whether computers are kept from this host: `on` when the supervisor sees the rule, or when a
   * running computer of its own failed to reach its own screen port on the host's screen address
   * (what a supervisor in a container, which cannot read the host's rules, can still try);
   * `unknown` when neither could be asked.
   */
  hostFirewall: "on" | "off" | "unknown";
  /** Null when the Docker host sees DATA_DIR at the same path, else what is wrong and how to fix it. */
  dataDirProblem: string | null;
  /** The home folders under DATA_DIR/homes. */
  homes: string[];
  /** The computers whose homes are under this supervisor's DATA_DIR. */
  computers: ComputerCheck[];
  /** Containers on the computers' network the supervisor did not make (started by hand, say). */
  strangers: { name: string; image: string }[];
}

/**
 * The supervisor's operations that cross the wire unchanged, declared once: the supervisor's
 * container manager implements them behind its routes, and its client (`client.ts`) calls them
 * over HTTP. Failures are problems with stable codes (`problems.ts`).
 */
export interface ComputerOperations {
  health(): Promise<Health>;
  /** `cubicle doctor`'s view: the image's version, this supervisor's computers against the spec, strangers. */
  diagnose(): Promise<Diagnosis>;
  /** Create the computer, or resume it; recreated (home kept) when made from another image. */
  create(ref: ComputerRef): Promise<CreateResult>;
  /** `missing` when no computer has the home key; COMPUTER_NOT_FOUND when it belongs to another id. */
  status(ref: ComputerRef): Promise<ComputerStatus>;
  /** Idempotent. */
  stop(ref: ComputerRef): Promise<void>;
  /** Removes the computer; its home stays. False when there was nothing to remove. */
  destroy(ref: ComputerRef): Promise<boolean>;
  /** Removes a file, a symlink (not its target) or a folder with its contents. */
  deleteFile(ref: ComputerRef, path: string): Promise<void>;
  /**
   * The whole home as a tar stream, paths relative to the home (`./…`). With `paths` (normalised
   * home-relative, "" the home), only those entries, each alone (a folder without its contents);
   * one gone meanwhile is left out, one that cannot be read fails the stream.
   */
  exportHome(ref: ComputerRef, options?: { paths?: readonly string[] }): Promise<ReadableStream<Uint8Array>>;
  /**
   * Every entry of the home with its stamp, for an export of only what changed; null when the
   * computer is stopped (it is then exported whole).
   */
  listHome(ref: ComputerRef): Promise<HomeListing | null>;
  /** Replaces the home's contents with the tar's; on failure the old contents stay. */
  importHome(ref: ComputerRef, tar: ReadableStream<Uint8Array>): Promise<void>;
  /**
   * Waits until the browsers running in the computer have written out what they keep in memory
   * (Chromium writes cookies up to 30 s late), without stopping them; returns at once when none
   * runs or the computer is stopped. An `exportHome` afterwards holds every browser change made
   * before the call.
   */
  settleBrowsers(ref: ComputerRef): Promise<void>;
  /**
   * Closes every browser in the computer gracefully (SIGTERM, so Chromium writes its profile;
   * SIGKILL only after 10 s) and waits for them to exit; the screens' browsers are not restarted.
   * Idempotent; returns at once when none runs or the computer is stopped.
   */
  closeBrowsers(ref: ComputerRef): Promise<void>;
  /** Starts the screen when needed; its view password stays the same while it runs. */
  openScreen(ref: ComputerRef, index: number): Promise<ScreenInfo>;
  closeScreen(ref: ComputerRef, index: number): Promise<void>;
  /**
   * Starts the screen's control server with `password`. Idempotent: one already running with the
   * same password is kept (its connections stay up); one with another password is replaced.
   */
  openControl(ref: ComputerRef, index: number, password: string): Promise<ControlInfo>;
  closeControl(ref: ComputerRef, index: number): Promise<void>;
  observe(ref: ComputerRef, index: number): Promise<Observation>;
  /** `actions` are already validated as a whole; runs them in order, stopping at the first failure. */
  act(ref: ComputerRef, index: number, actions: DesktopAction[]): Promise<ActResult>;
}
