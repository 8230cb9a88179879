"use client";

import type { ReactNode } from "react";
import type { Person } from "@/auth/session.ts";
import type { Computer } from "@/computers/queries.ts";
import { Busy, ErrorNote } from "@/ui/feedback.tsx";
import { exactTime } from "@/ui/format.ts";
import { atLeast, type Role } from "@/workspaces/queries.ts";
import { type ControlLease, controllerName, useScreenControl } from "./control.ts";
import { minutesAndSeconds, useSecondsLeft } from "./lease-clock.ts";
import styles from "./screens.module.css";

/**
 * Who controls the selected screen, and the caller's buttons for it: take control (members and up;
 * viewers only watch and see no such button), renew and release one's own lease, revoke someone
 * else's (admins and owners).
 */
export function ScreenControl({
  computer,
  screen,
  lease,
  me,
  role,
}: {
  computer: Computer;
  screen: number;
  /** The screen's live lease, if any. */
  lease: ControlLease | undefined;
  me: Person;
  role: Role | undefined;
}) {
  const { take, renew, end } = useScreenControl(computer, screen, me);
  const mine = lease?.holder.type === "user" && lease.holder.id === me.userId;
  const busy = take.isPending || renew.isPending || end.isPending;
  const error = take.error ?? renew.error ?? end.error;

  let body: ReactNode;
  if (!atLeast(role, "member")) {
    body = (
      <p className="muted">
        You are a viewer in this workspace: you can watch the screens, but not control them.
      </p>
    );
  } else if (lease && mine) {
    body = (
      <>
        <span className="badge warn">You control screen {screen}</span>
        <LeaseCountdown lease={lease} owner="Your control" />
        <button type="button" disabled={busy} onClick={() => renew.mutate(lease.leaseId)}>
          Renew
        </button>
        <button type="button" disabled={busy} onClick={() => end.mutate(lease.leaseId)}>
          Release
        </button>
      </>
    );
  } else if (lease) {
    body = (
      <>
        <span className="badge">
          {controllerName(lease.holder)} controls screen {screen}
        </span>
        <LeaseCountdown lease={lease} owner="Their control" />
        {atLeast(role, "admin") ? (
          <button type="button" className="danger" disabled={busy} onClick={() => end.mutate(lease.leaseId)}>
            Revoke control
          </button>
        ) : null}
      </>
    );
  } else {
    body = (
      <>
        <span className="muted">Nobody controls screen {screen}; you are watching it.</span>
        <button type="button" className="primary" disabled={busy} onClick={() => take.mutate()}>
          Take control
        </button>
      </>
    );
  }

  return (
    <div className="stack">
      <div className={styles.control}>{body}</div>
      {take.isPending ? <Busy label="Taking control…" /> : null}
      {end.isPending ? <Busy label={mine ? "Releasing control…" : "Revoking control…"} /> : null}
      {error && !busy ? <ErrorNote error={error} /> : null}
    </div>
  );
}

/** Seconds left of a lease, from its expiry time. */
function LeaseCountdown({ lease, owner }: { lease: ControlLease; owner: string }) {
  const left = useSecondsLeft(lease.expiresAt);
  if (left === null) return null;
  return (
    <span
      className={styles.countdown}
      role="timer"
      aria-label={`${owner} ends in ${left} seconds`}
      title={exactTime(lease.expiresAt)}
    >
      {owner} ends in {minutesAndSeconds(left)} ({left} s)
    </span>
  );
}
