/**
 * The subprotocol the viewer offers beside its token: RFB in binary frames plus the proxy's status
 * in text frames. It must equal SCREEN_STATUS_PROTOCOL in proxy/src/capability/capability.ts (a
 * proxy test compares the two); a proxy that does not know it refuses the socket.
 */
export const STATUS_PROTOCOL = "cubicle.screen.v1.status";

export type ScreenMode = "view" | "control";

/** What the embedding app's backend got from `POST …/screens/{index}/capabilities`: single use, ≤ 60 s. */
export interface ScreenCapability {
  token: string;
  expiresAt: string;
  mode: ScreenMode;
  /** The proxy's `/screen` socket (ws: or wss:). */
  url: string;
  protocol: string;
  recorded: boolean;
}

/** What the element needs of a capability, or undefined when the value cannot be one. */
export function readCapability(value: unknown): Pick<ScreenCapability, "token" | "mode" | "url"> | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { token, mode, url } = value as Record<string, unknown>;
  if (typeof token !== "string" || token === "") return undefined;
  if (mode !== "view" && mode !== "control") return undefined;
  if (typeof url !== "string" || !/^wss?:\/\//.test(url)) return undefined;
  return { token, mode, url };
}

export type ScreenStatus = { type: "controlled"; controlled: boolean } | { type: "lease"; expiresAt: Date };

/** A text frame from the proxy; undefined for anything this version does not know. */
export function readStatus(text: string): ScreenStatus | undefined {
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof message !== "object" || message === null) return undefined;
  const { type, controlled, expiresAt } = message as Record<string, unknown>;
  if (type === "controlled" && typeof controlled === "boolean") return { type, controlled };
  if (type === "lease" && typeof expiresAt === "string") {
    const date = new Date(expiresAt);
    if (!Number.isNaN(date.getTime())) return { type, expiresAt: date };
  }
  return undefined;
}

export type EndReason = "screen-closed" | "control-ended" | "idle" | "protocol-violation";

export type CloseOutcome =
  | { kind: "reconnect" }
  | { kind: "ended"; reason: EndReason }
  | { kind: "refused"; reason: "access-revoked" };

/**
 * What the proxy's close code means for the viewer. Anything unlisted (a browser's 1005, a code a
 * later proxy adds) is treated as a drop: the retry limit still bounds it.
 */
export function closeOutcome(code: number): CloseOutcome {
  switch (code) {
    case 1000:
      return { kind: "ended", reason: "screen-closed" };
    case 1008:
      return { kind: "ended", reason: "protocol-violation" };
    case 4001:
      return { kind: "ended", reason: "control-ended" };
    case 4002:
      return { kind: "ended", reason: "idle" };
    case 4004:
      return { kind: "refused", reason: "access-revoked" };
    default:
      return { kind: "reconnect" };
  }
}
