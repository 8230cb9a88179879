"use client";

import { useEffect, useState } from "react";

const secondsUntil = (iso: string) => Math.max(0, Math.ceil((new Date(iso).getTime() - Date.now()) / 1000));

/** Whole seconds until `expiresAt` (0 once past), ticking every second; null without a time. */
export function useSecondsLeft(expiresAt: string | undefined): number | null {
  const [left, setLeft] = useState(() => (expiresAt ? secondsUntil(expiresAt) : null));
  useEffect(() => {
    if (!expiresAt) {
      setLeft(null);
      return;
    }
    setLeft(secondsUntil(expiresAt));
    const timer = setInterval(() => setLeft(secondsUntil(expiresAt)), 1_000);
    return () => clearInterval(timer);
  }, [expiresAt]);
  return left;
}

/**
 * Whether `expiresAt` is still ahead, re-rendering once when it passes (not every second): a lease
 * that runs out turns the viewer back to view-only even before the computer's record is read again.
 */
export function useNotExpired(expiresAt: string | undefined): boolean {
  const [, expired] = useState(0);
  useEffect(() => {
    if (!expiresAt) return;
    const ms = new Date(expiresAt).getTime() - Date.now();
    if (ms <= 0) return;
    // setTimeout's limit is about 24.8 days; leases are hours at most.
    const timer = setTimeout(() => expired((n) => n + 1), ms + 50);
    return () => clearTimeout(timer);
  }, [expiresAt]);
  return expiresAt !== undefined && new Date(expiresAt).getTime() > Date.now();
}

/** "14:05" for 845 seconds. */
export function minutesAndSeconds(seconds: number): string {
  const m = Math.floor(seconds / 60);
  const s = seconds % 60;
  return `${m}:${String(s).padStart(2, "0")}`;
}
