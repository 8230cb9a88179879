import { PROBLEM_STATUS, type Problem, type ProblemCode } from "@cubicle/providers/supervisor-wire";
import type { ContentfulStatusCode } from "hono/utils/http-status";

export { PROBLEM_STATUS, type Problem, type ProblemCode };

/**
 * The codes, their statuses and the problem JSON are the wire's (`@cubicle/providers/supervisor-wire`,
 * which the client reads them back with); each status must be one Hono can answer with.
 */
PROBLEM_STATUS satisfies Record<ProblemCode, ContentfulStatusCode>;

/** Thrown anywhere below a route; the app's error handler turns it into problem JSON. */
export class SupervisorProblem extends Error {
  readonly status: ContentfulStatusCode;
  readonly errors: Problem["errors"];

  constructor(
    readonly code: ProblemCode,
    readonly detail: string,
    options?: { cause?: unknown; errors?: Problem["errors"] },
  ) {
    super(detail, options);
    this.name = "SupervisorProblem";
    this.status = PROBLEM_STATUS[code];
    this.errors = options?.errors;
  }
}

export const outsideHome = () =>
  new SupervisorProblem("PATH_OUTSIDE_HOME", "path is outside this computer's home");
export const tooLarge = (maxBytes: number) =>
  new SupervisorProblem("FILE_TOO_LARGE", `computer file exceeds ${maxBytes} bytes`);
export const computerNotFound = (homeKey: string) =>
  new SupervisorProblem("COMPUTER_NOT_FOUND", `no computer ${homeKey} with that computer and workspace id`);
export const computerStopped = (homeKey: string) =>
  new SupervisorProblem("COMPUTER_STOPPED", `computer ${homeKey} is stopped`);
