/**
 * The supervisor's wire contract: the shapes its routes answer with and its client returns.
 * Types and constants only, so the client (imported by the api) pulls in no server code. The
 * machine vocabulary these shapes carry (command events, files, actions) is the providers'
 * (`@cubicle/providers/contract`), shared with every other backend.
 */

import type { HomeListing } from "@cubicle/providers/contract";

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
