import { SupervisorProblem } from "../../problems.ts";

/** The HTTP status Docker answered with, when the error is Docker's answer (not a transport error). */
export function dockerStatus(error: unknown): number | undefined {
  if (typeof error !== "object" || error === null || !("statusCode" in error)) return undefined;
  return typeof error.statusCode === "number" ? error.statusCode : undefined;
}

/** Docker's own message (`{"message": …}`), falling back to the error's. */
export function dockerMessage(error: unknown): string {
  if (typeof error === "object" && error !== null && "json" in error) {
    const json = error.json;
    if (typeof json === "object" && json !== null && "message" in json && typeof json.message === "string") {
      return json.message;
    }
  }
  return error instanceof Error ? error.message : String(error);
}

const UNREACHABLE = new Set(["ECONNREFUSED", "ENOENT", "EACCES", "ECONNRESET", "EPIPE", "ETIMEDOUT"]);

export function isUnreachable(error: unknown): boolean {
  return (
    error instanceof Error && "code" in error && typeof error.code === "string" && UNREACHABLE.has(error.code)
  );
}

/** A Docker failure as the problem callers see: unreachable engine (503) or a failed call (502). */
export function dockerFailure(what: string, error: unknown): SupervisorProblem {
  if (error instanceof SupervisorProblem) return error;
  if (isUnreachable(error)) {
    return new SupervisorProblem("DOCKER_UNAVAILABLE", `the Docker engine is not reachable (${what})`, {
      cause: error,
    });
  }
  return new SupervisorProblem("DOCKER_FAILURE", `${what}: ${dockerMessage(error)}`, { cause: error });
}
