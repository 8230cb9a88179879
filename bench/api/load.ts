/**
 * An open-loop load: requests go out on a fixed schedule (one every 1/rate seconds) whether or not
 * earlier ones have been answered, and each one's latency runs from the time it was *scheduled*
 * to its last response byte. A slow answer therefore cannot hold back the requests behind it and
 * hide its own queueing (coordinated omission), as a closed loop, or autocannon's rate limit per
 * connection, would: autocannon times a request from when it was written, not when it was due.
 */
import { Agent, request } from "node:http";

export interface Call {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

/** A kind of request in the mix, with its weight (requests of this kind per cycle of the mix). */
export interface Kind {
  name: string;
  weight: number;
  /** The i-th request of this kind. */
  call(i: number): Call;
}

export interface KindResult {
  name: string;
  /** Milliseconds from the scheduled send to the last byte of the answer, answered requests only. */
  latencies: number[];
  /** Answers by status, and failures to answer (`error`). */
  statuses: Map<string, number>;
}

export interface LoadResult {
  kinds: KindResult[];
  /** Wall time from the first scheduled send to the last answer. */
  elapsedMs: number;
  /** Answered requests per second over `elapsedMs`. */
  achievedRate: number;
  /** The latest a request left after its scheduled time: how far the generator itself fell behind. */
  maxSendLagMs: number;
}

/**
 * The mix as a sequence in which every kind recurs evenly (smooth weighted round robin), so that no
 * kind comes in bursts: request n is of kind order[n % order.length].
 */
function interleave(kinds: readonly Kind[]): number[] {
  const total = kinds.reduce((sum, kind) => sum + kind.weight, 0);
  const current = kinds.map(() => 0);
  const order: number[] = [];
  for (let n = 0; n < total; n++) {
    let best = 0;
    for (let k = 0; k < kinds.length; k++) {
      current[k] = (current[k] as number) + (kinds[k] as Kind).weight;
      if ((current[k] as number) > (current[best] as number)) best = k;
    }
    current[best] = (current[best] as number) - total;
    order.push(best);
  }
  return order;
}

/**
 * Sends `rate` requests a second for `seconds` to `baseUrl`, mixed as `kinds` weighs them, and
 * waits for every answer (or `timeoutMs` for each).
 */
export async function runOpenLoop(
  baseUrl: string,
  kinds: readonly Kind[],
  options: { rate: number; seconds: number; timeoutMs?: number; signal?: AbortSignal },
): Promise<LoadResult> {
  const { rate, seconds, timeoutMs = 10_000, signal } = options;
  const url = new URL(baseUrl);
  // Enough sockets that the client never queues at this rate unless the api does.
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const order = interleave(kinds);
  const results: KindResult[] = kinds.map((kind) => ({
    name: kind.name,
    latencies: [],
    statuses: new Map(),
  }));
  const sentOfKind = kinds.map(() => 0);
  const total = Math.round(rate * seconds);
  const interval = 1000 / rate;
  let maxSendLagMs = 0;
  let answered = 0;
  let lastAnswer = 0;

  const count = (result: KindResult, status: string) =>
    result.statuses.set(status, (result.statuses.get(status) ?? 0) + 1);

  const send = (n: number, due: number): Promise<void> => {
    const k = order[n % order.length] as number;
    const kind = kinds[k] as Kind;
    const result = results[k] as KindResult;
    const nth = sentOfKind[k] as number;
    sentOfKind[k] = nth + 1;
    const call = kind.call(nth);
    maxSendLagMs = Math.max(maxSendLagMs, performance.now() - due);
    return new Promise((done) => {
      const req = request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          method: call.method,
          path: call.path,
          headers: {
            ...call.headers,
            ...(call.body === undefined
              ? {}
              : { "content-type": "application/json", "content-length": Buffer.byteLength(call.body) }),
          },
          timeout: timeoutMs,
        },
        (response) => {
          response.resume();
          response.once("end", () => {
            lastAnswer = performance.now();
            answered++;
            result.latencies.push(lastAnswer - due);
            count(result, String(response.statusCode));
            done();
          });
          response.once("error", () => {
            count(result, "error");
            done();
          });
        },
      );
      req.once("timeout", () => req.destroy(new Error("timed out")));
      req.once("error", () => {
        count(result, "error");
        done();
      });
      req.end(call.body);
    });
  };

  const inFlight: Promise<void>[] = [];
  const start = performance.now() + 10;
  // Stopped from outside (the bench is interrupted): nothing more is sent, and the connections are
  // cut so that the api, closing, is not held open by them.
  signal?.addEventListener("abort", () => agent.destroy(), { once: true });
  await new Promise<void>((finished) => {
    let n = 0;
    const tick = () => {
      const now = performance.now();
      for (; n < total && start + n * interval <= now; n++) inFlight.push(send(n, start + n * interval));
      if (n < total && !signal?.aborted)
        setTimeout(tick, Math.max(0, start + n * interval - performance.now()));
      else finished();
    };
    setTimeout(tick, 10);
  });
  await Promise.all(inFlight);
  agent.destroy();
  const elapsedMs = lastAnswer - start;
  return { kinds: results, elapsedMs, achievedRate: (answered / elapsedMs) * 1000, maxSendLagMs };
}
