import type { HomeListing } from "../contract/index.ts";
import { parseStampedListing, stampedListingFindArgs } from "../kernel/home-listing.ts";
import { shellQuote } from "../kernel/shell-quote.ts";
import { inStaging } from "./files.ts";
import { failure, type SandboxMachine } from "./machine.ts";

const LISTING_MS = 300_000;

/**
 * Every entry of the home with its stamp, listed by `find` in the sandbox (stampedListingFindArgs)
 * and without an import's staging folders, which no export includes. `listedAt` is the sandbox's
 * clock, which set the change times, read by the same command before find starts. The listing goes
 * to a scratch file fetched through the vendor's file API: it holds NULs, and it may be large,
 * while a command's output is small text.
 */
export async function listHome(machine: SandboxMachine): Promise<HomeListing> {
  const out = machine.scratchFile("listing");
  try {
    const find = ["find", ...stampedListingFindArgs(machine.home)].map(shellQuote).join(" ");
    const result = await machine.exec(`date +%s.%N && ${find} >${shellQuote(out)}`, {
      timeoutMs: LISTING_MS,
    });
    const listedAt = Number(result.stdout.trim());
    if (result.exitCode !== 0 || !Number.isFinite(listedAt)) throw failure("listing the home", result);
    const listing = parseStampedListing(Buffer.from(await machine.shell.download(out)), listedAt);
    return { listedAt, entries: listing.entries.filter((entry) => !inStaging(entry.path)) };
  } finally {
    await machine.removeScratch(out);
  }
}
