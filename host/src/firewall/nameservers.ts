import { readFileSync } from "node:fs";
import { isIPv4 } from "node:net";

/**
 * The host's own IPv4 name servers, loopback ones left out (a computer cannot reach the host's
 * loopback). Behind systemd-resolved (127.0.0.53) its upstream servers, as Docker itself does.
 */
export function hostNameservers(
  files: readonly string[] = ["/etc/resolv.conf", "/run/systemd/resolve/resolv.conf"],
): string[] {
  for (const file of files) {
    let text = "";
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    const found = nameserversIn(text);
    if (found.length > 0) return found;
  }
  return [];
}

/** A resolv.conf's IPv4 name servers but loopback ones. */
export const nameserversIn = (text: string): string[] =>
  [...text.matchAll(/^\s*nameserver\s+(\S+)/gm)]
    .map((match) => match[1] as string)
    .filter((address) => isIPv4(address) && !address.startsWith("127."));
