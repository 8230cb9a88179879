import { randomBytes } from "node:crypto";
import type { FirewallRunner } from "@cubicle/host/firewall-runner";
import type { EgressRefusal } from "@cubicle/providers/contract";
import { COMPUTER_TAG_PATTERN } from "./rules.ts";

/** Recent refusals kept per computer; the counters count every one. */
export const RING_SIZE = 200;

/** One LOG line of a refusal chain: `… CE-<hash> IN=cubicle0 OUT=eth0 … DST=a.b.c.d … PROTO=TCP … DPT=443 …` */
const LINE = new RegExp(
  String.raw`(${COMPUTER_TAG_PATTERN}) ?IN=\S* OUT=\S*.*? DST=(\S+) .*?PROTO=(\S+)(?:.*? DPT=(\d+))?`,
);

export function parseLogLine(line: string): { tag: string; refusal: Omit<EgressRefusal, "at"> } | null {
  const match = LINE.exec(line);
  if (!match) return null;
  const [, tag, address, protocol, port] = match as unknown as [string, string, string, string, string?];
  return {
    tag,
    refusal: { address, port: port === undefined ? null : Number(port), protocol: protocol.toLowerCase() },
  };
}

interface Entry {
  seq: number;
  refusal: EgressRefusal;
}

/**
 * The refusal chains' LOG lines, read from the kernel log as they come (`dmesg --follow-new`, run
 * by the firewall runner: a process rather than a blocking read of /dev/kmsg on Node's small thread
 * pool, and one the supervisor may run without the right to read the log itself), kept in a
 * bounded ring per computer. A cursor is `<run>.<seq>`: one from an earlier run of the supervisor
 * starts over.
 */
export class RefusalLog {
  private readonly run = randomBytes(4).toString("hex");
  private seq = 0;
  private readonly rings = new Map<string, Entry[]>();
  private stopFollowing: (() => void) | null = null;

  constructor(private readonly homeKeyOf: (tag: string) => string | undefined) {}

  /** Starts reading unless it already does (a reader that ended is started again by the next call). */
  start(runner: FirewallRunner): void {
    if (this.stopFollowing) return;
    const stop = runner.follow(
      "dmesg",
      ["--follow-new", "--notime"],
      (line) => this.add(line),
      () => {
        if (this.stopFollowing === stop) this.stopFollowing = null;
      },
    );
    this.stopFollowing = stop;
  }

  stop(): void {
    this.stopFollowing?.();
    this.stopFollowing = null;
  }

  add(line: string, at = new Date()): void {
    const parsed = parseLogLine(line);
    const homeKey = parsed ? this.homeKeyOf(parsed.tag) : undefined;
    if (!parsed || homeKey === undefined) return;
    const ring = this.rings.get(homeKey) ?? [];
    ring.push({ seq: ++this.seq, refusal: { at: at.toISOString(), ...parsed.refusal } });
    if (ring.length > RING_SIZE) ring.splice(0, ring.length - RING_SIZE);
    this.rings.set(homeKey, ring);
  }

  /** The computer's refusals after `after` (every one kept when null or from another run). */
  after(homeKey: string, after: string | null): { refusals: EgressRefusal[]; cursor: string } {
    const [run, seqText] = (after ?? "").split(".");
    const from = run === this.run ? Number(seqText) || 0 : 0;
    const entries = (this.rings.get(homeKey) ?? []).filter((entry) => entry.seq > from);
    const last = entries.at(-1)?.seq ?? Math.max(from, 0);
    return { refusals: entries.map((entry) => entry.refusal), cursor: `${this.run}.${last}` };
  }

  forget(homeKey: string): void {
    this.rings.delete(homeKey);
  }
}
