import type { CapabilityContext, CubicleScreenElement, GetCapability } from "./element.ts";

/** The element's events the frame passes on to the embedding page. */
export const FORWARDED_EVENTS = ["state", "connect", "disconnect", "control-ended", "lease"] as const;
export type ScreenEventName = (typeof FORWARDED_EVENTS)[number];

/** How long the frame waits for the embedding page to answer a capability request. */
const CAPABILITY_WAIT_MS = 10_000;

type FrameMessage =
  | { type: "cubicle:need-capability"; id: string; reason: CapabilityContext["reason"] }
  | { type: "cubicle:capability"; id: string; capability: unknown }
  | { type: "cubicle:capability-error"; id: string }
  | { type: "cubicle:event"; name: ScreenEventName; detail: Record<string, unknown> };

function isMessage(data: unknown): data is FrameMessage {
  return typeof data === "object" && data !== null && typeof (data as { type?: unknown }).type === "string";
}

/** postMessage carries Dates, but as Dates only to same-realm readers: the wire says ISO strings. */
function plainDetail(detail: unknown): Record<string, unknown> {
  if (typeof detail !== "object" || detail === null) return {};
  return Object.fromEntries(
    Object.entries(detail).map(([key, value]) => [key, value instanceof Date ? value.toISOString() : value]),
  );
}

/**
 * The parent's origin where the browser says it (Chromium and Safari, `location.ancestorOrigins`),
 * if it is an allowed one; else undefined, and messages are addressed to each allowed origin in turn
 * (the browser delivers only the one that matches, logging the others as mismatches).
 */
function knownParentOrigin(allowed: readonly string[]): string | undefined {
  const parent = window.location.ancestorOrigins?.[0];
  return parent !== undefined && allowed.includes(parent) ? parent : undefined;
}

/**
 * Inside the iframe: the element asks the embedding page for each capability by postMessage (never
 * through a URL), and tells it what happens. Only `window.parent` at one of `parentOrigins` is
 * answered or heard, and messages are addressed only to those origins, so they reach the parent
 * only if it is one of them. Returns a function that stops serving (pending requests fail).
 */
export function serveScreenFrame(
  element: CubicleScreenElement,
  options: { parentOrigins: string[] },
): () => void {
  // a malformed origin fails here, at set-up, rather than in postMessage inside an event listener
  const parentOrigins = options.parentOrigins.map((origin) => new URL(origin).origin);
  const parent = knownParentOrigin(parentOrigins);
  const post = (message: FrameMessage) => {
    for (const origin of parent ? [parent] : parentOrigins) window.parent.postMessage(message, origin);
  };
  const waiting = new Map<string, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let nextId = 0;

  const onMessage = (event: MessageEvent) => {
    if (event.source !== window.parent || !parentOrigins.includes(event.origin)) return;
    const data: unknown = event.data;
    if (!isMessage(data) || (data.type !== "cubicle:capability" && data.type !== "cubicle:capability-error"))
      return;
    const request = waiting.get(data.id);
    if (!request) return;
    if (data.type === "cubicle:capability") request.resolve(data.capability);
    else request.reject(new Error("the embedding page could not get a capability"));
  };
  window.addEventListener("message", onMessage);

  const forwarders = FORWARDED_EVENTS.map((name) => {
    const forward = (event: Event) =>
      post({ type: "cubicle:event", name, detail: plainDetail((event as CustomEvent).detail) });
    element.addEventListener(name, forward);
    return () => element.removeEventListener(name, forward);
  });

  const getCapability: GetCapability = ({ reason }) => {
    nextId += 1;
    const id = String(nextId);
    return new Promise((resolve, reject) => {
      const settle = () => {
        clearTimeout(timer);
        waiting.delete(id);
      };
      const timer = setTimeout(() => {
        settle();
        reject(new Error("the embedding page did not answer"));
      }, CAPABILITY_WAIT_MS);
      waiting.set(id, {
        // the element checks the value's shape itself
        resolve: (value) => {
          settle();
          resolve(value as Awaited<ReturnType<GetCapability>>);
        },
        reject: (error) => {
          settle();
          reject(error);
        },
      });
      post({ type: "cubicle:need-capability", id, reason });
    });
  };
  element.getCapability = getCapability;

  return () => {
    window.removeEventListener("message", onMessage);
    for (const request of [...waiting.values()]) request.reject(new Error("the frame stopped serving"));
    for (const stop of forwarders) stop();
    if (element.getCapability === getCapability) element.getCapability = null;
  };
}

export interface ScreenFrameOptions {
  /** The origin the iframe's page is served from (the Cubicle dashboard). */
  frameOrigin: string;
  /** Fetches a fresh capability from your backend; called for every attempt. */
  getCapability: (context: CapabilityContext) => Promise<unknown>;
  /** The element's events inside the frame; Dates arrive as ISO strings. */
  onEvent?: (name: ScreenEventName, detail: Record<string, unknown>) => void;
}

/**
 * In the embedding page: answers the capability requests of exactly this iframe's window at
 * `frameOrigin`, and passes on its events. Returns a function that stops listening.
 */
export function connectScreenFrame(iframe: HTMLIFrameElement, options: ScreenFrameOptions): () => void {
  const frameOrigin = new URL(options.frameOrigin).origin;

  const onMessage = (event: MessageEvent) => {
    const frame = iframe.contentWindow;
    if (!frame || event.source !== frame || event.origin !== frameOrigin) return;
    const data: unknown = event.data;
    if (!isMessage(data)) return;
    if (data.type === "cubicle:event") {
      if (FORWARDED_EVENTS.includes(data.name)) options.onEvent?.(data.name, plainDetail(data.detail));
      return;
    }
    if (data.type !== "cubicle:need-capability" || typeof data.id !== "string") return;
    const { id } = data;
    const reason = data.reason === "reconnect" ? "reconnect" : "initial";
    void (async () => {
      try {
        const capability = await options.getCapability({ reason });
        frame.postMessage({ type: "cubicle:capability", id, capability } satisfies FrameMessage, frameOrigin);
      } catch {
        // the frame retries with a fresh request; why it failed stays in this page
        frame.postMessage({ type: "cubicle:capability-error", id } satisfies FrameMessage, frameOrigin);
      }
    })();
  };
  window.addEventListener("message", onMessage);
  return () => window.removeEventListener("message", onMessage);
}
