import { expect } from "vitest";
import type { Tally } from "./tally.ts";

/** An answer as either sender saw it (fetch, or the raw connection). */
export interface Answer {
  status: number;
  contentType: string | null | undefined;
  text: string;
}

export interface Expectation {
  /** The statuses that are the designed answer; any 4xx when left out. */
  status?: readonly number[];
  code?: string;
}

/** Why an answer is not a clear refusal (4xx problem JSON with type, title, status and detail). */
export function refusalFaults(answer: Answer, expected: Expectation = {}): string[] {
  const faults: string[] = [];
  const { status } = answer;
  if (expected.status ? !expected.status.includes(status) : status < 400 || status > 499)
    faults.push(`status ${status}, wanted ${expected.status?.join(" or ") ?? "4xx"}`);
  if (!answer.contentType?.startsWith("application/problem+json"))
    faults.push(`content-type ${answer.contentType ?? "none"}`);
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(answer.text);
  } catch {
    faults.push(`body is not JSON: ${answer.text.slice(0, 80)}`);
  }
  for (const field of ["type", "title", "detail"])
    if (typeof body[field] !== "string" || body[field] === "") faults.push(`no ${field}`);
  if (body.status !== status) faults.push(`body status ${String(body.status)}`);
  if (expected.code && body.code !== expected.code)
    faults.push(`code ${String(body.code)}, wanted ${expected.code}`);
  return faults;
}

/**
 * Counts each hostile request (tried) and each clear refusal (refused), and keeps what was wrong
 * with the others so that one case lists every route and input that misbehaved, not the first.
 */
export function refusals(tally: Tally) {
  const wrong: string[] = [];
  return {
    check(label: string, answer: Answer, expected?: Expectation) {
      tally.tried();
      const faults = refusalFaults(answer, expected);
      if (faults.length === 0) tally.refused();
      else wrong.push(`${label}: ${faults.join("; ")}`);
    },
    /** A request that got no answer at all (a hang past its bound, a dropped connection). */
    unanswered(label: string, error: unknown) {
      tally.tried();
      wrong.push(`${label}: ${error instanceof Error ? error.message : String(error)}`);
    },
    expectAllRefused() {
      expect(wrong, "hostile requests not refused as designed").toEqual([]);
    },
  };
}
