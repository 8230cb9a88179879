import type { components } from "./schema";

/** An RFC 9457 problem as the api sends it. */
export type Problem = components["schemas"]["Problem"];
export type SessionHolder = NonNullable<Problem["holder"]>;

/**
 * What the api refused, as an Error: `code` is stable and machine-readable (`STALE_FENCE`,
 * `BOT_NOT_FOUND`…), `detail` says it for people. Answers that are not problem JSON (a proxy's
 * HTML page, say) get the code `HTTP_<status>`.
 */
export class CubicleError extends Error {
  readonly status: number;
  readonly code: string;
  readonly detail: string;
  /** The api's request id, to find the call in its logs. */
  readonly requestId: string | undefined;

  constructor(readonly problem: Problem) {
    super(problem.detail ?? `${problem.title} (${problem.code})`);
    this.name = "CubicleError";
    this.status = problem.status;
    this.code = problem.code;
    this.detail = problem.detail ?? problem.title;
    this.requestId = problem.requestId;
  }
}

/** Opening a session for a bot that already has one: `holder` says who holds it, and until when. */
export class ComputerBusyError extends CubicleError {
  readonly holder: SessionHolder;

  constructor(problem: Problem & { holder: SessionHolder }) {
    super(problem);
    this.name = "ComputerBusyError";
    this.holder = problem.holder;
  }
}

/** The error a failed response stands for; `body` when the caller already read it. */
export async function errorOf(response: Response, body?: unknown): Promise<CubicleError> {
  const parsed = body ?? (await response.text().then(parseJson, () => undefined));
  const problem = isProblem(parsed)
    ? parsed
    : {
        type: "about:blank",
        title: response.statusText || `HTTP ${response.status}`,
        status: response.status,
        code: `HTTP_${response.status}`,
      };
  if (problem.code === "COMPUTER_BUSY" && problem.holder)
    return new ComputerBusyError({ ...problem, holder: problem.holder });
  return new CubicleError(problem);
}

/** A problem the client itself finds (no such bot by that name), shaped like the api's. */
export function localError(status: number, code: string, detail: string): CubicleError {
  return new CubicleError({ type: "about:blank", title: code, status, code, detail });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isProblem(value: unknown): value is Problem {
  const candidate = value as Partial<Problem> | undefined;
  return typeof candidate?.code === "string" && typeof candidate.status === "number";
}
