import { isDatabaseUnavailable } from "@cubicle/db";
import { ProviderError, type ProviderErrorCode } from "@cubicle/providers/contract";
import { APIError } from "better-auth/api";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { CheckpointStoreError } from "../checkpoints/store/index.ts";
import { HttpProblem } from "./problem.ts";

/** How long a caller waits before asking a backend (or the database) that did not answer again. */
const RETRY_AFTER_SECONDS = 5;

/** The HTTP status each provider failure is answered with. */
const PROVIDER_ERROR_STATUS = {
  SANDBOX_DISABLED: 503,
  GRAPHICAL_UNAVAILABLE: 409,
  MULTI_SCREEN_UNAVAILABLE: 409,
  MACHINE_MISSING: 409,
  MACHINE_STOPPED: 409,
  PATH_OUTSIDE_HOME: 400,
  FILE_NOT_FOUND: 404,
  FILE_TOO_LARGE: 413,
  DISK_FULL: 507,
  NOT_A_FILE: 400,
  NOT_A_DIRECTORY: 400,
  INVALID_PATH: 400,
  INVALID_ACTIONS: 400,
  INVALID_SCREEN: 400,
  INVALID_PASSWORD: 400,
  APP_LAUNCH_FAILED: 502,
  EGRESS_UNSUPPORTED: 422,
  PROVIDER_AUTH_FAILED: 502,
  PROVIDER_FAILURE: 502,
  PROVIDER_UNAVAILABLE: 503,
} as const satisfies Record<ProviderErrorCode, ContentfulStatusCode>;

/**
 * The one translation from anything a handler may throw to the problem a client sees.
 * Undefined means "not ours to explain": the caller logs it and answers 500 without details.
 */
export function toHttpProblem(error: unknown): HttpProblem | undefined {
  if (error instanceof HttpProblem) return error;
  if (error instanceof ProviderError) {
    const problem = new HttpProblem(PROVIDER_ERROR_STATUS[error.code], error.code, error.message);
    // a backend that does not answer now may shortly: when to ask again
    if (error.code === "PROVIDER_UNAVAILABLE") problem.retryAfterSeconds = RETRY_AFTER_SECONDS;
    return problem;
  }
  if (error instanceof CheckpointStoreError) {
    // The archive came from the computer: one that breaks off is the provider's failure.
    if (error.code === "INVALID_ARCHIVE")
      return new HttpProblem(
        502,
        "CHECKPOINT_FAILED",
        `The computer's home could not be read whole: ${error.message}`,
      );
    if (error.code === "NO_SPACE")
      return new HttpProblem(
        507,
        "CHECKPOINT_STORE_FULL",
        `The checkpoint store has no space left; the revision was not kept: ${error.message}`,
      );
    return new HttpProblem(500, "CHECKPOINT_UNREADABLE", `The checkpoint store failed: ${error.message}`);
  }
  if (error instanceof APIError) {
    const status = error.statusCode as HttpProblem["status"];
    const code = typeof error.body?.code === "string" ? error.body.code : String(error.status);
    return new HttpProblem(status, code, error.body?.message ?? error.message);
  }
  if (error instanceof HTTPException)
    return new HttpProblem(error.status, "MALFORMED_REQUEST", error.message);
  if (isDatabaseUnavailable(error)) {
    // restarting or unreachable: a passing condition, not the request's fault
    const problem = new HttpProblem(503, "DATABASE_UNAVAILABLE", "The database cannot be reached right now.");
    problem.retryAfterSeconds = RETRY_AFTER_SECONDS;
    return problem;
  }
  return undefined;
}
