/**
 * The supervisor's problems as they cross the wire: every failure a caller can act on, by stable
 * code, with the status fixed per code. The supervisor throws them (its `SupervisorProblem`), the
 * client reads them back (`SupervisorError`).
 */
export const PROBLEM_STATUS = {
  UNAUTHORIZED: 401,
  NOT_FOUND: 404,
  INVALID_REQUEST: 400,
  INVALID_HOME_KEY: 400,
  LENGTH_REQUIRED: 411,
  COMPUTER_NOT_FOUND: 404,
  COMPUTER_STOPPED: 409,
  /** A container with the computer's name exists but was not made by the supervisor. */
  NAME_CONFLICT: 409,
  SCREEN_OUT_OF_RANGE: 400,
  /** Screen 0 lives as long as the computer; it is not stopped on its own. */
  SCREEN_PERMANENT: 409,
  PATH_OUTSIDE_HOME: 400,
  INVALID_PATH: 400,
  FILE_NOT_FOUND: 404,
  NOT_A_FILE: 400,
  NOT_A_DIRECTORY: 400,
  FILE_TOO_LARGE: 413,
  /** The computer's disk (its home's filesystem) has no space left for the write. */
  DISK_FULL: 507,
  INVALID_ARCHIVE: 400,
  INVALID_ACTIONS: 400,
  HOME_UNAVAILABLE: 500,
  IMAGE_MISSING: 503,
  DOCKER_UNAVAILABLE: 503,
  DOCKER_FAILURE: 502,
  /** The supervisor may not change the host's firewall, so it cannot enforce an egress policy. */
  EGRESS_UNENFORCED: 503,
  /** A well-formed policy Docker computers cannot carry (an IPv6 destination: their network has none). */
  EGRESS_UNSUPPORTED: 422,
  /** Something inside the computer (a script, a tool) failed. */
  COMPUTER_FAILURE: 502,
  INTERNAL: 500,
} as const;

export type ProblemCode = keyof typeof PROBLEM_STATUS;

/** RFC 9457 problem details with a stable `code`, as every error response carries. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  code: string;
  detail?: string;
  instance?: string;
  errors?: { path: string; message: string }[];
}
