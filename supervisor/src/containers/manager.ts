import type {
  ActResult,
  CommandEvent,
  DesktopAction,
  EgressPolicy,
  EgressReport,
  FileEntry,
  HomeListing,
  Observation,
} from "@cubicle/providers/contract";
import type {
  ComputerRef,
  ComputerStatus,
  ComputerSummary,
  ControlInfo,
  CreateResult,
  Diagnosis,
  ExecRequest,
  Health,
  ScreenInfo,
} from "../wire.ts";

export type { ComputerRef };

/** What `GET …/files` found: a folder's entries or a file's bytes (never a partial file). */
export type OpenedPath =
  | { kind: "directory"; entries: FileEntry[] }
  | { kind: "file"; size: number; body: ReadableStream<Uint8Array> };

/**
 * Where computers run, behind the routes. Every method reads what exists back from the backend
 * (labels, processes, files inside the computer), never from memory, so a restarted supervisor
 * serves the same computers. Docker is one implementation; a Kubernetes one can sit beside it.
 *
 * Failures are `SupervisorProblem`s with stable codes. Methods that stream check everything they
 * can (the computer, paths, sizes) before the stream starts, so a problem is still a proper status.
 */
export interface ContainerManager {
  health(): Promise<Health>;
  /** `cubicle doctor`'s view: the image's version, this supervisor's computers against the spec, strangers. */
  diagnose(): Promise<Diagnosis>;

  /** Create the computer, or resume it; recreated (home kept) when made from another image. */
  create(ref: ComputerRef): Promise<CreateResult>;
  /** `missing` when no computer has the home key; COMPUTER_NOT_FOUND when it belongs to another id. */
  status(ref: ComputerRef): Promise<ComputerStatus>;
  list(): Promise<ComputerSummary[]>;
  /** Idempotent. */
  stop(ref: ComputerRef): Promise<void>;
  /** Removes the computer; its home stays. False when there was nothing to remove. */
  destroy(ref: ComputerRef): Promise<boolean>;
  /** Removes managed computers whose home key is not in `keep`; returns their names. */
  reconcile(keep: ReadonlySet<string>): Promise<string[]>;

  /**
   * Stores the computer's egress policy; a running computer's rules are replaced before this
   * returns (no restart). A computer not made yet gets it when it is.
   */
  setEgress(ref: ComputerRef, policy: EgressPolicy): Promise<void>;
  /** The computer's policy (the default when none was set) and its refusals after `after`. */
  egress(ref: ComputerRef, after: string | null): Promise<{ policy: EgressPolicy; report: EgressReport }>;
  /** Stops what the manager runs in the background (the refusal log reader). */
  close(): Promise<void>;

  /**
   * Runs a shell command; the events end with exactly one `exit`. Timeout and `signal` kill the
   * whole process tree inside the computer (124 / 130).
   */
  exec(ref: ComputerRef, request: ExecRequest, signal: AbortSignal): Promise<AsyncIterable<CommandEvent>>;

  openPath(
    ref: ComputerRef,
    path: string,
    options: { maxBytes: number; expect?: "file" | "directory" },
  ): Promise<OpenedPath>;
  /** Writes `size` bytes from `body`; parent folders are created; mode 0755 when executable, else 0644. */
  writeFile(
    ref: ComputerRef,
    path: string,
    body: ReadableStream<Uint8Array>,
    options: { size: number; executable: boolean },
  ): Promise<void>;
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
