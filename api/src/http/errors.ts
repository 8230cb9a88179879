import { APIError } from "better-auth/api";
import { HTTPException } from "hono/http-exception";
import { CheckpointStoreError } from "../checkpoints/store/index.ts";
import { ProviderError } from "../providers/errors.ts";
import { HttpProblem } from "./problem.ts";

/**
 * The one translation from anything a handler may throw to the problem a client sees.
 * Undefined means "not ours to explain": the caller logs it and answers 500 without details.
 */
export function toHttpProblem(error: unknown): HttpProblem | undefined {
  if (error instanceof HttpProblem) return error;
  if (error instanceof ProviderError) return new HttpProblem(error.status, error.code, error.message);
  if (error instanceof CheckpointStoreError) {
    // The archive came from the computer: one that breaks off is the provider's failure.
    if (error.code === "INVALID_ARCHIVE")
      return new HttpProblem(
        502,
        "CHECKPOINT_FAILED",
        `The computer's home could not be read whole: ${error.message}`,
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
  return undefined;
}
