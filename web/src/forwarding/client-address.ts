import type { AsyncLocalStorage } from "node:async_hooks";

// Set by web/server.mjs, which accepted the browser's connection; the same key is written there.
const CLIENT_ADDRESS = Symbol.for("cubicle.web.clientAddress");

/**
 * The address of the browser whose request is being handled, as the dashboard's server saw it
 * connect (or as its trusted proxies reported it). Undefined when the dashboard runs without that
 * server (plain `next start`, `next dev`): then nobody knows, and nothing is claimed.
 */
export function clientAddress(): string | undefined {
  const store = (globalThis as Record<symbol, AsyncLocalStorage<string | undefined> | undefined>)[
    CLIENT_ADDRESS
  ];
  return store?.getStore();
}
