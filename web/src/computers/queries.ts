"use client";

import { type QueryClient, useIsMutating, useQuery } from "@tanstack/react-query";
import { api, type Schema, unwrap } from "@/api/client.ts";
import { pollAtExpiry, useLive } from "@/events/live.ts";

export type Computer = Schema<"Computer">;
export type ComputerState = Computer["state"];

/** States a computer passes through on its own; while one shows, its record is polled until it settles. */
const TRANSITIONAL: readonly ComputerState[] = ["booting", "suspending"];
export const isTransitional = (state: ComputerState) => TRANSITIONAL.includes(state);

/**
 * Polling while something changes: quick enough to show "Running" soon after it is. Kept while
 * events are followed: entering `booting` or `suspending` is no event (only settled states are
 * audited), and a start or stop under way shows its progress this way.
 */
const SETTLING_POLL_MS = 2_000;
/** Polling otherwise, without events: who uses which screen and who controls it changes elsewhere. */
const UNFOLLOWED_POLL_MS = 5_000;
/**
 * With events followed, sessions, control and states come as events; what moves without one is
 * the last activity (every tool call touches it), which reads well enough a minute late, and the
 * expiries that renewals push back (pollAtExpiry).
 */
const LAST_ACTIVITY_POLL_MS = 60_000;

function pollMs(computers: readonly Computer[], settling: boolean, live: boolean) {
  if (settling) return SETTLING_POLL_MS;
  if (!live) return UNFOLLOWED_POLL_MS;
  const expiries = computers.flatMap((computer) => [
    ...computer.sessions.map((session) => session.expiresAt),
    ...computer.control.map((lease) => lease.expiresAt),
  ]);
  return pollAtExpiry(expiries, LAST_ACTIVITY_POLL_MS);
}

export const computersKey = (workspaceId: string) => ["workspaces", workspaceId, "computers"] as const;
export const computerKey = (workspaceId: string, computerId: string) =>
  [...computersKey(workspaceId), computerId] as const;
/** Start, stop and destroy of one computer share this key, so pages can tell one is under way. */
export const computerActionKey = (computerId: string) => ["computer-action", computerId] as const;

/** "Team Computer", or "<bot>'s Private Computer". */
export function computerName(computer: Computer): string {
  if (computer.scope === "team") return "Team Computer";
  return `${computer.bot?.name ?? "A bot"}'s Private Computer`;
}

export function useComputers(workspaceId: string) {
  const acting = useIsMutating({ mutationKey: ["computer-action"] }) > 0;
  const live = useLive();
  return useQuery({
    queryKey: computersKey(workspaceId),
    queryFn: async () =>
      (await unwrap(api.GET("/v1/workspaces/{workspaceId}/computers", { params: { path: { workspaceId } } })))
        .items,
    refetchInterval: ({ state: { data = [] } }) =>
      pollMs(data, acting || data.some((computer) => isTransitional(computer.state)), live),
  });
}

export function useComputer(workspaceId: string, computerId: string) {
  const acting = useIsMutating({ mutationKey: computerActionKey(computerId) }) > 0;
  const live = useLive();
  return useQuery({
    queryKey: computerKey(workspaceId, computerId),
    queryFn: () =>
      unwrap(
        api.GET("/v1/workspaces/{workspaceId}/computers/{computerId}", {
          params: { path: { workspaceId, computerId } },
        }),
      ),
    // A start answers only once the machine runs; meanwhile the record shows `booting`.
    refetchInterval: ({ state: { data } }) =>
      pollMs(data ? [data] : [], acting || (data !== undefined && isTransitional(data.state)), live),
  });
}

/** Puts a computer the api just answered with into the caches of the page and the list. */
export function storeComputer(client: QueryClient, computer: Computer) {
  client.setQueryData(computerKey(computer.workspaceId, computer.id), computer);
  client.setQueryData<Computer[]>(computersKey(computer.workspaceId), (list) =>
    list?.map((one) => (one.id === computer.id ? computer : one)),
  );
}
