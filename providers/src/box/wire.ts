/**
 * The parts of Box's REST API (OpenAPI `box-v1.yaml`, "Box Public API v1") that Cubicle uses, as
 * the vendor documents them. Box publishes no SDK this project can install, so these types are the
 * SDK's: written from the vendor's schemas, kept to the fields Cubicle reads.
 */

/** `ready | idle | running` accept commands; the rest are on their way somewhere. */
export type BoxState =
  | "init"
  | "provisioning"
  | "provisioned"
  | "cloning"
  | "ready"
  | "idle"
  | "running"
  | "archiving"
  | "archived"
  | "deleting"
  | "error";

export interface Box {
  id: string;
  name?: string;
  state: BoxState;
  archiveAfter?: string | null;
}

/** Every success body: `{ ok, type }` plus the operation's fields. */
export interface Envelope {
  ok: boolean;
  type: string;
}

export interface BoxInfo extends Envelope {
  box: Box;
}

/** `POST /boxes/{id}/commands` run to its end. */
export interface CommandFinished extends Envelope {
  type: "command.finished";
  exitCode: number | null;
  signal?: string | null;
  stdout: string;
  stderr: string;
  stdoutTruncated?: boolean;
  stderrTruncated?: boolean;
  timedOut: boolean;
}

/** `POST /boxes/{id}/commands` with `detached: true`. */
export interface CommandStarted extends Envelope {
  type: "command.started";
  processId: number;
  logPath: string;
  errLogPath: string;
}

/** `GET /boxes/{id}/commands/{processId}`. */
export interface CommandStatus extends Envelope {
  type: "command.status";
  status: "running" | "exited" | "lost";
  running: boolean;
  exitCode: number | null;
  signal?: string | null;
}

export interface FileRead extends Envelope {
  type: "file.read";
  encoding: "utf8" | "base64";
  size: number;
  content: string;
}

/** `POST /boxes/{id}/desktop?vnc=1`: the URL, or "still preparing, ask again". */
export interface DesktopAnswer extends Envelope {
  provisioning?: boolean;
  desktopUrl?: string | null;
}

/** The error body; the HTTP status is authoritative. */
export interface ErrorBody {
  ok: false;
  type: "box.error";
  status: number;
  code: string;
  message: string;
  requestId?: string;
}

/** The most a status call may ask for of a log's tail. */
export const MAX_TAIL_BYTES = 524_288;
/** The longest a command may run by Box's clock. */
export const MAX_COMMAND_SECONDS = 600;
