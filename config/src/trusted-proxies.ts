import proxyAddr from "proxy-addr";

/** What an entry of TRUSTED_PROXIES may be: what proxy-addr, which every process matches with, reads. */
export const TRUSTED_PROXY_RULE =
  "must be an IP address, a CIDR (10.0.0.0/8) or one of loopback, linklocal, uniquelocal";

/** The entries of a TRUSTED_PROXIES list that proxy-addr refuses, so a process can name them. */
export function invalidTrustedProxies(entries: readonly string[]): string[] {
  return entries.filter((entry) => {
    try {
      proxyAddr.compile(entry);
      return false;
    } catch {
      return true;
    }
  });
}
