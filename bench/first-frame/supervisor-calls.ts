/**
 * Where an api call's time goes on the supervisor: every request the api sends it, timed from the
 * api's side, so that the bench can split a session's open into the supervisor's steps and the
 * api's own work. The api's supervisor client takes the global fetch when it is made, so `record`
 * must run before the api starts; other requests (the proxy's to the api) pass through untimed.
 */

export interface Call {
  step: string;
  start: number;
  end: number;
}

/** The supervisor's routes the api uses to open a session, by what they do (supervisor/README.md). */
export const STEPS = [
  { step: "make or resume the computer", method: "PUT", path: /^\/computers\/[^/]+$/ },
  { step: "its egress policy", method: "PUT", path: /^\/computers\/[^/]+\/egress$/ },
  { step: "open screen 0 (view password)", method: "PUT", path: /^\/computers\/[^/]+\/screens\/\d+$/ },
  { step: "status checks", method: "GET", path: /^\/computers\/[^/]+$/ },
] as const;
/** Calls no step names: the api's background jobs (egress reports), which run beside the request. */
export const OTHER = "other calls, meanwhile";

export function recordSupervisorCalls(supervisorUrl: string): Call[] {
  const calls: Call[] = [];
  const fetchBefore = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.origin !== new URL(supervisorUrl).origin) return fetchBefore(input, init);
    const method = init?.method ?? (input instanceof Request ? input.method : "GET");
    const step = STEPS.find((s) => s.method === method && s.path.test(url.pathname))?.step ?? OTHER;
    const start = performance.now();
    try {
      return await fetchBefore(input, init);
    } finally {
      calls.push({ step, start, end: performance.now() });
    }
  };
  return calls;
}

/** Milliseconds spent in each step between `from` and `to` (calls that began in the window), and how many calls. */
export function stepsBetween(
  calls: readonly Call[],
  from: number,
  to: number,
): Map<string, { ms: number; calls: number }> {
  const steps = new Map<string, { ms: number; calls: number }>();
  for (const call of calls) {
    if (call.start < from || call.start > to) continue;
    const step = steps.get(call.step) ?? { ms: 0, calls: 0 };
    step.ms += call.end - call.start;
    step.calls += 1;
    steps.set(call.step, step);
  }
  return steps;
}

export const ALL_STEPS: readonly string[] = [...STEPS.map((s) => s.step), OTHER];
