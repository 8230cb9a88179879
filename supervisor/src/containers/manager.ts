import type { CommandEvent, EgressPolicy, EgressReport, FileEntry } from "@cubicle/providers/contract";
import type {
  ComputerOperations,
  ComputerRef,
  ComputerSummary,
  ExecRequest,
} from "@cubicle/providers/supervisor-wire";

export type { ComputerRef };

/** What `GET …/files` found: a folder's entries or a file's bytes (never a partial file). */
export type OpenedPath =
  | { kind: "directory"; entries: FileEntry[] }
  | { kind: "file"; size: number; body: ReadableStream<Uint8Array> };

/**
 * Where computers run, behind the routes. Every method reads what exists back from the backend
 * (labels, processes, files inside the computer), never from memory, so a restarted supervisor
 * serves the same computers. Docker is one implementation; a Kubernetes one can sit beside it.
 * The operations that cross the wire unchanged are the wire's (`ComputerOperations`, with the
 * client in @cubicle/providers); the rest differ on the wire (streams, bodies, a set of keys).
 *
 * Failures are `SupervisorProblem`s with stable codes. Methods that stream check everything they
 * can (the computer, paths, sizes) before the stream starts, so a problem is still a proper status.
 */
export interface ContainerManager extends ComputerOperations {
  list(): Promise<ComputerSummary[]>;
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
}
