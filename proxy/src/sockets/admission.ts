/** Counts open sockets per key (client address, subject) so one caller cannot take every socket. */
export class SocketLimit {
  private readonly open = new Map<string, number>();

  constructor(private readonly max: number) {}

  /** A release function when under the limit; undefined when the key is at its limit. */
  take(key: string): (() => void) | undefined {
    const count = this.open.get(key) ?? 0;
    if (count >= this.max) return undefined;
    this.open.set(key, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(key) ?? 1) - 1;
      if (left === 0) this.open.delete(key);
      else this.open.set(key, left);
    };
  }
}

/**
 * Browsers always send Origin on a WebSocket; it must be the dashboard's or one of the workspace's
 * embed origins, and the one a capability is bound to, if it is bound. A request without one comes
 * from a program (an automation's RFB client), which the capability alone authorises, unless it is
 * bound to an origin: such a token is meant for one site's page and nothing else.
 */
export function originAllowed(
  origin: string | undefined,
  allowed: { dashboard: readonly string[]; embed: readonly string[]; bound: string | undefined },
): boolean {
  if (allowed.bound !== undefined) return origin === allowed.bound && allowed.embed.includes(origin);
  return origin === undefined || allowed.dashboard.includes(origin) || allowed.embed.includes(origin);
}

/**
 * The capability presented as a WebSocket subprotocol beside one of ours (never in a URL that logs
 * keep), and which of ours it was: the one the proxy answers with.
 */
export function offeredProtocols(
  header: string | undefined,
  ours: readonly string[],
): { protocol: string; token: string } | undefined {
  const offered = (header ?? "")
    .split(",")
    .map((value) => value.trim())
    .filter((value) => value !== "");
  if (offered.length !== 2) return undefined;
  const protocol = offered.find((value) => ours.includes(value));
  const token = offered.find((value) => value !== protocol);
  return protocol !== undefined && token !== undefined && !ours.includes(token)
    ? { protocol, token }
    : undefined;
}
