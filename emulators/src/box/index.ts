/**
 * A loopback Box (ascii.dev's cloud computers): its REST API for Cubicle's own Box client, with
 * boxes that are real desktop containers on the local Docker engine, Box's state machine and
 * timings, and a token-gated noVNC desktop per box. Test and development only. See
 * emulators/README.md.
 */
import { randomBytes } from "node:crypto";
import { shutDown } from "../http/server.ts";
import { type EmulatorOptions, instanceOf, localEngine, Machines } from "../machines/index.ts";
import { BoxRegistry, type BoxTimings, TIMINGS } from "./registry.ts";
import { API_PREFIX, BoxServer } from "./server.ts";

export { type BoxTimings, QUICK_TIMINGS, TIMINGS } from "./registry.ts";

/** The image reproducing Box's sandbox template (emulators/images/box-desktop). */
export const BOX_DESKTOP_IMAGE = "cubicle-box-desktop:latest";

/** The image is BOX_DESKTOP_IMAGE unless told another; the API key "box_…". */
export interface BoxEmulatorOptions extends EmulatorOptions {
  /**
   * Box's waits (TIMINGS unless told others). Suites about the client, not about Box's clock, make
   * them short: each state still shows, for less long.
   */
  timings?: Partial<BoxTimings>;
}

export interface BoxEmulator {
  /** BOX_API_URL, http://127.0.0.1:PORT/api/box/v1 */
  apiUrl: string;
  /** BOX_API_KEY */
  apiKey: string;
  /** Deletes a box behind its users' back (its container is removed, GET is a 404). */
  forget(boxId: string): Promise<void>;
  /** What the emulator knows, for tests. */
  boxes(): Promise<
    Array<{
      id: string;
      name: string;
      state: string;
      noEnv: boolean;
      ttlSeconds: number | null;
      archiveAfter: string | null;
      containerId: string;
    }>
  >;
  /**
   * Every request the API received, oldest first (the latest 10,000, and 64 MiB of bodies): method,
   * path (without query), query, JSON body (or null). Secrets (Authorization) are not kept.
   */
  requests(): Array<{ method: string; path: string; query: Record<string, string>; body: unknown }>;
  /** The next `count` API requests answer `status` (429 or 503) with Retry-After: retryAfterSeconds, before doing anything. */
  failNext(count: number, status: 429 | 503, retryAfterSeconds: number): void;
  /** Stops serving; with removeBoxes, removes every container it owns. */
  close(options?: { removeBoxes?: boolean }): Promise<void>;
}

export async function startBoxEmulator(options: BoxEmulatorOptions = {}): Promise<BoxEmulator> {
  const instance = instanceOf(options, BOX_DESKTOP_IMAGE);
  const { log } = instance;
  const registry = new BoxRegistry(new Machines(localEngine()), instance, {
    ...TIMINGS,
    ...options.timings,
  });
  await registry.adopt();
  const apiKey = options.apiKey ?? `box_${randomBytes(24).toString("hex")}`;
  const server = new BoxServer({
    apiKey,
    registry,
    host: options.host ?? "127.0.0.1",
    port: options.port ?? 0,
    log,
  });
  const url = await server.listen();
  log(`Box emulator listening on ${url}`);
  return {
    apiUrl: `${url}${API_PREFIX}`,
    apiKey,
    async forget(boxId) {
      const box = registry.get(boxId);
      if (box) await registry.forget(box);
    },
    async boxes() {
      return registry.list().map((box) => ({
        id: box.id,
        name: box.settings.name,
        state: box.state,
        noEnv: box.settings.noEnv,
        ttlSeconds: box.settings.ttlSeconds,
        archiveAfter: box.settings.archiveAfter,
        containerId: box.containerId,
      }));
    },
    requests() {
      return server.recorded.map((request) => ({ ...request, query: { ...request.query } }));
    },
    failNext(count, status, retryAfterSeconds) {
      Object.assign(server.failures, { count, status, retryAfterSeconds });
    },
    async close(closeOptions = {}) {
      await registry.release();
      await shutDown(server.httpServer);
      if (closeOptions.removeBoxes) await registry.removeAll();
    },
  };
}
