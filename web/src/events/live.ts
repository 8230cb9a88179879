"use client";

import { createContext, useContext } from "react";

/**
 * Whether the workspace's live events are followed right now (LiveEvents, live-events.tsx): while
 * they are, queries whose changes are all events stop polling, since each event reads them again.
 */
export const LiveContext = createContext(false);

export const useLive = () => useContext(LiveContext);

/** Past an expiry, the record is read again this much later (a renewal made well before it is in). */
const AFTER_EXPIRY_MS = 500;
/** A record still showing a past expiry is read at most this often until the ending's event comes. */
const FLOOR_MS = 2_000;

/**
 * Renewals (session heartbeats, control lease renewals) are no events: they come every few
 * seconds and change only an expiry. So with events followed, a record showing expiries is read
 * again just after the soonest one, which shows the renewal (or, after the ending's event, its
 * absence); `otherwise` when it shows none.
 */
export function pollAtExpiry(expiries: readonly string[], otherwise: number | false): number | false {
  const soonest = Math.min(...expiries.map((iso) => new Date(iso).getTime()));
  if (!Number.isFinite(soonest)) return otherwise;
  const ms = Math.max(soonest - Date.now() + AFTER_EXPIRY_MS, FLOOR_MS);
  return otherwise === false ? ms : Math.min(ms, otherwise);
}
