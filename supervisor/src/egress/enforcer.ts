import { Resolver } from "node:dns/promises";
import path from "node:path";
import type { FirewallRunner } from "@cubicle/host/firewall-runner";
import { type Iptables, iptablesOf } from "@cubicle/host/iptables";
import { KeyedLock } from "@cubicle/host/keyed-lock";
import { DEFAULT_EGRESS, type EgressPolicy, type EgressReport } from "@cubicle/providers/contract";
import type { ComputerRef } from "@cubicle/providers/supervisor-wire";
import { SupervisorProblem } from "../problems.ts";
import { isPublicIPv4, targetOf } from "./policy.ts";
import { RefusalLog } from "./refusals.ts";
import {
  type Allowed,
  baseRules,
  COMPUTER_TAG_PATTERN,
  chainOf,
  computerRules,
  computerTag,
  EGRESS_CHAIN,
  type Generation,
  jumpComment,
  refuseChainOf,
} from "./rules.ts";
import { type EgressState, EgressStore } from "./store.ts";

/** What an operator does so that a supervisor enforces egress policies (README "Egress"). */
export const EGRESS_FIX =
  "run the supervisor as root on the Docker host, or set SUPERVISOR_FIREWALL_CONTAINER to a container on the host's network with NET_ADMIN and SYSLOG and the host's iptables backend (the Compose stack's `firewall` service: docker compose --profile docker up -d firewall)";

/** A computer's jump in EGRESS_CHAIN as `iptables -S` lists it: its address, home key and generation. */
const JUMP = new RegExp(
  String.raw`-s (\S+)\/32 -m comment --comment "cubicle-egress:([^"]+)" -[gj] ${COMPUTER_TAG_PATTERN}-([AB])$`,
);
/** The computer a jump in EGRESS_CHAIN leads to. */
const JUMP_TARGET = new RegExp(`-g (${COMPUTER_TAG_PATTERN})-[AB]$`);
/** A computer's chain (either generation, rules or refusals) as `iptables -S` declares it. */
const CHAIN = new RegExp(`^-N ((${COMPUTER_TAG_PATTERN})-[AB]R?)$`);

/** Host names are resolved again when their records expire, within these bounds. */
const MIN_REFRESH_S = 30;
const MAX_REFRESH_S = 600;

interface Bound {
  address: string;
  /** The resolved allowlist the current rules were built from, to tell whether a refresh changed it. */
  allowed: string;
  timer: NodeJS.Timeout | null;
}

/**
 * Each computer's egress policy as iptables rules on the computers' bridge (README "Egress"):
 * EGRESS_CHAIN, hooked from DOCKER-USER, jumps by source address to the computer's own chain.
 * A policy change builds the other generation of the computer's chains and moves the jump in one
 * iptables-restore transaction, so no packet meets a half-made rule set.
 */
export class EgressEnforcer {
  private readonly locks = new KeyedLock();
  private readonly store: EgressStore;
  private readonly bound = new Map<string, Bound>();
  private readonly tags = new Map<string, string>();
  private readonly log = new RefusalLog((tag) => this.tags.get(tag));
  private readonly resolver = new Resolver({ timeout: 5_000, tries: 3 });
  private readonly fw: Iptables | null;
  private bridge: string | null = null;
  private subnet: string | null = null;
  /** Why policies are not enforced, once `prepare` found out. */
  private unenforced: string;

  constructor(
    dataDir: string,
    private readonly resolvers: readonly string[],
    /** Null when the supervisor may not touch the host's firewall (SUPERVISOR_HOST_FIREWALL=off). */
    private readonly runner: FirewallRunner | null,
  ) {
    this.store = new EgressStore(path.join(dataDir, "egress"));
    this.fw = runner && iptablesOf(runner);
    this.unenforced = runner
      ? "the computers' network is not ready yet"
      : "SUPERVISOR_HOST_FIREWALL is off (unset it)";
    if (resolvers.length > 0) this.resolver.setServers([...resolvers]);
  }

  /** Why egress policies are not enforced (null when they are), with what to do about it. */
  problem(): string | null {
    return this.bridge ? null : `${this.unenforced}; ${EGRESS_FIX}`;
  }

  private get iptables(): Iptables {
    return this.fw as Iptables;
  }

  /**
   * Makes EGRESS_CHAIN and hooks it for `bridge` (idempotent; other supervisors on this host share
   * it), and keeps the bridge's IPv6 from going anywhere (the computers' network is IPv4-only).
   * False when iptables cannot be used here.
   */
  async prepare(bridge: string, subnet: string): Promise<boolean> {
    if (!this.fw || !this.runner) return false;
    const { chainRules, iptables, restore, succeeds } = this.fw;
    // Docker's own chain, seen through the runner: the runner may change the firewall, with the
    // backend Docker uses (a runner on the other one would write rules no packet meets)
    const refused = await iptables(["-S", "DOCKER-USER"]).then(
      () => null,
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    );
    if (refused !== null) {
      this.bridge = null;
      this.unenforced = `${this.runner.where} cannot change the host's firewall or does not see Docker's DOCKER-USER chain (${refused})`;
      return false;
    }
    if ((await chainRules(EGRESS_CHAIN)) === null) {
      await restore([
        `:${EGRESS_CHAIN} - [0:0]`,
        ...baseRules().map((rule) => ["-A", EGRESS_CHAIN, ...rule].join(" ")),
      ]).catch(async (error: unknown) => {
        // another supervisor made it meanwhile
        if ((await chainRules(EGRESS_CHAIN)) === null) throw error;
      });
    }
    const hook = ["DOCKER-USER", "-i", bridge, "-j", EGRESS_CHAIN];
    if (!(await succeeds(["-C", ...hook]))) await iptables(["-I", ...hook]);
    for (const chain of ["INPUT", "FORWARD"]) {
      const rule = [chain, "-i", bridge, "-j", "DROP"];
      if (!(await succeeds(["-C", ...rule], 6))) await iptables(["-I", ...rule], 6).catch(() => undefined);
    }
    this.bridge = bridge;
    this.subnet = subnet;
    this.log.start(this.runner);
    return true;
  }

  /** Whether computers on `bridge` go through EGRESS_CHAIN. */
  active(bridge: string): Promise<boolean> {
    if (!this.fw || this.bridge !== bridge) return Promise.resolve(false);
    return this.fw.succeeds(["-C", "DOCKER-USER", "-i", bridge, "-j", EGRESS_CHAIN]);
  }

  async policyOf(homeKey: string): Promise<EgressPolicy> {
    return (await this.store.get(homeKey))?.policy ?? DEFAULT_EGRESS;
  }

  /** Stores the computer's policy, and enforces it at once when the computer runs at `address`. */
  set(ref: ComputerRef, policy: EgressPolicy, address: string | null): Promise<void> {
    return this.locks.run(ref.homeKey, async () => {
      if (!this.bridge) {
        throw new SupervisorProblem(
          "EGRESS_UNENFORCED",
          `this supervisor cannot enforce egress policies: ${this.problem()}`,
        );
      }
      const state = await this.store.get(ref.homeKey);
      await this.store.put({ ref, policy, refusedBefore: state?.refusedBefore ?? 0 });
      if (address) await this.apply(ref.homeKey, address);
    });
  }

  /** Enforces the computer's stored policy (the default when none) for its current address. */
  attach(ref: ComputerRef, address: string): Promise<void> {
    return this.locks.run(ref.homeKey, async () => {
      if (!this.bridge) return;
      if (!(await this.store.get(ref.homeKey))) {
        await this.store.put({ ref, policy: DEFAULT_EGRESS, refusedBefore: 0 });
      }
      await this.apply(ref.homeKey, address);
    });
  }

  /** The computer stopped: its address may go to another, so its rules go (the policy stays). */
  detach(homeKey: string): Promise<void> {
    return this.locks.run(homeKey, () => this.unbind(homeKey));
  }

  /** The computer was removed: its rules and its state go. */
  forget(homeKey: string): Promise<void> {
    return this.locks.run(homeKey, async () => {
      await this.unbind(homeKey);
      await this.store.delete(homeKey);
      this.log.forget(homeKey);
    });
  }

  /**
   * Removes the jumps of computers that no longer run at their jump's address (stopped or removed
   * behind the supervisor's back, or while it was down), whichever supervisor made them: an address
   * Docker hands out again must not carry an old computer's policy.
   */
  async sweep(addressNow: (homeKey: string) => Promise<string | null>): Promise<void> {
    for (const rule of (await this.iptables.chainRules(EGRESS_CHAIN)) ?? []) {
      const match = JUMP.exec(rule);
      if (!match) continue;
      const [, address, homeKey, generation] = match as unknown as [string, string, string, Generation];
      if ((await addressNow(homeKey)) === address) continue;
      await this.locks.run(homeKey, async () => {
        await this.iptables.restore([rule.replace(/^-A /, "-D ")]).catch(() => undefined);
        await this.dropChains(homeKey, generation);
      });
    }
    await this.dropUnreached();
  }

  /**
   * Removes the chains of computers no jump reaches (removed behind every supervisor's back): they
   * are inert, but would pile up on the host. A computer's chains are made with its jump in one
   * transaction, and one between generations still has a jump, so no live computer's are touched.
   */
  private async dropUnreached(): Promise<void> {
    // chains first, jumps second: a computer's chains and jump are made in one transaction, so a
    // chain listed here either has its jump in the read below or is on its way out; read the other
    // way round, a computer attached between the reads would look unreached
    const listed = await this.iptables.iptables(["-S"]);
    const reached = new Set(
      ((await this.iptables.chainRules(EGRESS_CHAIN)) ?? []).flatMap(
        (rule) => JUMP_TARGET.exec(rule)?.[1] ?? [],
      ),
    );
    const unreached: string[] = [];
    for (const line of listed.split("\n")) {
      const match = CHAIN.exec(line);
      if (match && !reached.has(match[2] as string)) unreached.push(match[1] as string);
    }
    await this.removeChains(unreached);
  }

  async report(
    homeKey: string,
    after: string | null,
  ): Promise<{ policy: EgressPolicy; report: EgressReport }> {
    const state = await this.store.get(homeKey);
    const current = await this.currentGeneration(homeKey);
    const live = current
      ? await this.iptables.rejectedPackets(refuseChainOf(computerTag(homeKey), current))
      : 0;
    return {
      policy: state?.policy ?? DEFAULT_EGRESS,
      report: { refusedTotal: (state?.refusedBefore ?? 0) + live, ...this.log.after(homeKey, after) },
    };
  }

  close(): void {
    this.log.stop();
    for (const bound of this.bound.values()) if (bound.timer) clearTimeout(bound.timer);
  }

  /** The jumps in EGRESS_CHAIN that are this computer's, or for this address (a stale one). */
  private async jumpsOf(homeKey: string, address: string | null): Promise<string[]> {
    if (!this.fw) return [];
    const rules = (await this.fw.chainRules(EGRESS_CHAIN)) ?? [];
    // iptables -S quotes the comment
    const comment = `--comment "${jumpComment(homeKey)}" `;
    return rules.filter(
      (rule) => rule.includes(comment) || (address !== null && rule.includes(` -s ${address}/32 `)),
    );
  }

  private async currentGeneration(homeKey: string): Promise<Generation | null> {
    const tag = computerTag(homeKey);
    for (const rule of await this.jumpsOf(homeKey, null)) {
      if (rule.endsWith(`-g ${chainOf(tag, "A")}`)) return "A";
      if (rule.endsWith(`-g ${chainOf(tag, "B")}`)) return "B";
    }
    return null;
  }

  private async apply(homeKey: string, address: string): Promise<void> {
    const state = (await this.store.get(homeKey)) as EgressState;
    const tag = computerTag(homeKey);
    this.tags.set(tag, homeKey);
    const { allowed, ttl } = await this.resolveAllowed(state.policy);
    const previous = await this.currentGeneration(homeKey);
    const generation: Generation = previous === "A" ? "B" : "A";
    const built = computerRules(tag, generation, {
      level: state.policy.level,
      resolvers: this.resolvers,
      subnet: this.subnet as string,
      allowed,
    });
    const swap = async () => {
      const stale = (await this.jumpsOf(homeKey, address)).map((rule) => rule.replace(/^-A /, "-D "));
      await this.iptables.restore([
        ...built.lines,
        ...stale,
        `-I ${EGRESS_CHAIN} 2 -s ${address}/32 -m comment --comment ${jumpComment(homeKey)} -g ${built.chain}`,
      ]);
    };
    // another supervisor on this host may have removed a stale jump between the read and the swap
    await swap().catch(swap);
    if (previous) await this.dropChains(homeKey, previous);
    this.bind(homeKey, address, JSON.stringify(allowed), ttl);
  }

  private bind(homeKey: string, address: string, allowed: string, ttl: number | null): void {
    const old = this.bound.get(homeKey);
    if (old?.timer) clearTimeout(old.timer);
    const timer =
      ttl === null ? null : setTimeout(() => void this.refresh(homeKey).catch(() => undefined), ttl * 1000);
    timer?.unref();
    this.bound.set(homeKey, { address, allowed, timer });
  }

  /**
   * Re-resolves an allowlist's names; the rules change only when the addresses did, and a failed
   * lookup keeps the addresses the rules have (it is tried again soon).
   */
  private refresh(homeKey: string): Promise<void> {
    return this.locks.run(homeKey, async () => {
      const bound = this.bound.get(homeKey);
      const state = await this.store.get(homeKey);
      if (!bound || !state) return;
      const { allowed, ttl, failed } = await this.resolveAllowed(state.policy);
      if (!failed && JSON.stringify(allowed) !== bound.allowed) await this.apply(homeKey, bound.address);
      else this.bind(homeKey, bound.address, bound.allowed, ttl);
    });
  }

  /**
   * The allowlist as IPv4 blocks. A name counts only with its public addresses (a name must not
   * open the LAN or the metadata service by resolving there); one that does not resolve now allows
   * nothing until a later refresh.
   */
  private async resolveAllowed(
    policy: EgressPolicy,
  ): Promise<{ allowed: Allowed[]; ttl: number | null; failed: boolean }> {
    if (policy.level !== "allowlist") return { allowed: [], ttl: null, failed: false };
    const allowed: Allowed[] = [];
    let ttl: number | null = null;
    let failed = false;
    for (const destination of policy.allow) {
      const target = targetOf(destination.host);
      if (typeof target === "string") continue;
      if (target.kind === "cidr") {
        allowed.push({ cidr: target.cidr, ports: destination.ports });
        continue;
      }
      const records = await this.resolver.resolve4(target.name, { ttl: true }).catch(() => {
        failed = true;
        return [];
      });
      for (const record of records) {
        if (isPublicIPv4(record.address))
          allowed.push({ cidr: `${record.address}/32`, ports: destination.ports });
      }
      const seconds = records.length === 0 ? MIN_REFRESH_S : Math.min(...records.map((record) => record.ttl));
      ttl = Math.max(MIN_REFRESH_S, Math.min(ttl ?? MAX_REFRESH_S, seconds));
    }
    return { allowed, ttl, failed };
  }

  private async unbind(homeKey: string): Promise<void> {
    const bound = this.bound.get(homeKey);
    if (bound?.timer) clearTimeout(bound.timer);
    this.bound.delete(homeKey);
    if (!this.bridge) return;
    const current = await this.currentGeneration(homeKey);
    const removeJumps = async () => {
      const jumps = await this.jumpsOf(homeKey, null);
      if (jumps.length > 0) await this.iptables.restore(jumps.map((rule) => rule.replace(/^-A /, "-D ")));
    };
    // another supervisor's start-up sweep removes the jump of a computer that just stopped, and may
    // do so between the read and the removal
    await removeJumps().catch(removeJumps);
    if (current) await this.dropChains(homeKey, current);
  }

  /** Removes one generation of the computer's chains, adding what its counters counted to the total. */
  private async dropChains(homeKey: string, generation: Generation): Promise<void> {
    const tag = computerTag(homeKey);
    const refused = await this.iptables.rejectedPackets(refuseChainOf(tag, generation));
    const state = await this.store.get(homeKey);
    if (state && refused > 0)
      await this.store.put({ ...state, refusedBefore: state.refusedBefore + refused });
    await this.removeChains([chainOf(tag, generation), refuseChainOf(tag, generation)]);
  }

  /**
   * Each chain is emptied and deleted in one transaction (declaring a chain empties it, or makes it
   * when gone, so that its -X holds): a chain something still jumps to (a live computer's, should a
   * caller be wrong about it) is refused whole, never left empty, as an empty chain lets every
   * packet through. All at once first, as one run instead of a run per chain and step cost a policy
   * change 0.2–0.5 s under load; when that is refused, one at a time, twice, since a chain another
   * in the list jumps to goes only once that one has.
   */
  private async removeChains(chains: readonly string[]): Promise<void> {
    const remove = (names: readonly string[]) =>
      this.iptables
        .restore([...names.map((chain) => `:${chain} - [0:0]`), ...names.map((chain) => `-X ${chain}`)])
        .then(
          () => true,
          () => false,
        );
    if (chains.length === 0 || (await remove(chains))) return;
    let left = [...chains];
    for (let pass = 0; pass < 2 && left.length > 0; pass++) {
      const refused: string[] = [];
      for (const chain of left) if (!(await remove([chain]))) refused.push(chain);
      left = refused;
    }
  }
}
