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
 * Browsers always send Origin on a WebSocket; it must be one of ours. A request without one comes
 * from a program (an automation's RFB client), which the capability alone authorises.
 */
export function originAllowed(origin: string | undefined, allowed: readonly string[]): boolean {
  return origin === undefined || allowed.includes(origin);
}

/** The capability presented as a WebSocket subprotocol beside ours: never in a URL that logs keep. */
export function tokenFromProtocols(header: string | undefined, protocol: string): string | undefined {
  const offered = (header ?? "")
    .split(",")
    .map((value) => value.trim())
    .filter((value) => value !== "");
  if (offered.length !== 2 || !offered.includes(protocol)) return undefined;
  return offered.find((value) => value !== protocol);
}
