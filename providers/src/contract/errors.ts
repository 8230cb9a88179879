/**
 * Every provider failure callers can act on, by stable code. The api answers each with problem
 * JSON (api/src/http/errors.ts gives each code its HTTP status).
 */
export const PROVIDER_ERROR_CODES = [
  "SANDBOX_DISABLED",
  "GRAPHICAL_UNAVAILABLE",
  "MULTI_SCREEN_UNAVAILABLE",
  "MACHINE_MISSING",
  "MACHINE_STOPPED",
  "PATH_OUTSIDE_HOME",
  "FILE_NOT_FOUND",
  "FILE_TOO_LARGE",
  /** The computer's disk is full: free space in it (delete files) and try again. */
  "DISK_FULL",
  "NOT_A_FILE",
  "NOT_A_DIRECTORY",
  "INVALID_PATH",
  "INVALID_ACTIONS",
  "INVALID_SCREEN",
  "INVALID_PASSWORD",
  "APP_LAUNCH_FAILED",
  /** The backend cannot enforce the egress level asked for (its capabilities.egress lists those it can). */
  "EGRESS_UNSUPPORTED",
  /** The vendor refused the configured API key: the operator's to fix, not a passing failure. */
  "PROVIDER_AUTH_FAILED",
  "PROVIDER_FAILURE",
  /** The backend does not answer (its supervisor stopped, say): try again shortly. */
  "PROVIDER_UNAVAILABLE",
] as const;

export type ProviderErrorCode = (typeof PROVIDER_ERROR_CODES)[number];

export class ProviderError extends Error {
  constructor(
    readonly code: ProviderErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "ProviderError";
  }
}

export const outsideHome = () =>
  new ProviderError("PATH_OUTSIDE_HOME", "path is outside this computer's home");
export const tooLarge = (maxBytes: number) =>
  new ProviderError("FILE_TOO_LARGE", `computer file exceeds ${maxBytes} bytes`);
/** An operation that needs the machine running, on a stopped one. */
export const machineStopped = () =>
  new ProviderError("MACHINE_STOPPED", "the computer is stopped; provision it to resume");
