import { ProviderError, type ProviderErrorCode } from "../contract/index.ts";
import { SupervisorError } from "./supervisor/client.ts";

/** The supervisor's problem codes, in the provider contract's words. */
const CODES: Partial<Record<SupervisorError["code"], ProviderErrorCode>> = {
  COMPUTER_NOT_FOUND: "MACHINE_MISSING",
  COMPUTER_STOPPED: "MACHINE_STOPPED",
  SCREEN_OUT_OF_RANGE: "INVALID_SCREEN",
  PATH_OUTSIDE_HOME: "PATH_OUTSIDE_HOME",
  INVALID_PATH: "INVALID_PATH",
  FILE_NOT_FOUND: "FILE_NOT_FOUND",
  NOT_A_FILE: "NOT_A_FILE",
  NOT_A_DIRECTORY: "NOT_A_DIRECTORY",
  FILE_TOO_LARGE: "FILE_TOO_LARGE",
  DISK_FULL: "DISK_FULL",
  INVALID_ACTIONS: "INVALID_ACTIONS",
  EGRESS_UNSUPPORTED: "EGRESS_UNSUPPORTED",
  SUPERVISOR_UNREACHABLE: "PROVIDER_UNAVAILABLE",
};

export function asProviderError(error: unknown): unknown {
  if (!(error instanceof SupervisorError)) return error;
  if (error.code === "UNAUTHORIZED") {
    // the operator's to fix, in their words: the supervisor never says why it refused
    return new ProviderError(
      "PROVIDER_AUTH_FAILED",
      "the supervisor refused SANDBOX_SUPERVISOR_TOKEN: give the api and the supervisor the same token",
      { cause: error },
    );
  }
  return new ProviderError(CODES[error.code] ?? "PROVIDER_FAILURE", error.message, { cause: error });
}

/** Runs a supervisor call and speaks the contract's errors. */
export async function translated<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw asProviderError(error);
  }
}
