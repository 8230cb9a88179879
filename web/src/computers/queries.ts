"use client";

import { type QueryClient, useIsMutating, useQuery } from "@tanstack/react-query";
import { api, type Schema, unwrap } from "@/api/client.ts";

export type Computer = Schema<"Computer">;
export type ComputerState = Computer["state"];

/** States a computer passes through on its own; while one shows, its record is polled until it settles. */
const TRANSITIONAL: readonly ComputerState[] = ["booting", "suspending"];
export const isTransitional = (state: ComputerState) => TRANSITIONAL.includes(state);

/** Polling while something changes: quick enough to show "Running" soon after it is. */
const SETTLING_POLL_MS = 2_000;
/** Polling otherwise: who uses which screen and who controls it changes without this page knowing. */
const LIVE_POLL_MS = 5_000;

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
  return useQuery({
    queryKey: computersKey(workspaceId),
    queryFn: async () =>
      (await unwrap(api.GET("/v1/workspaces/{workspaceId}/computers", { params: { path: { workspaceId } } })))
        .items,
    refetchInterval: (query) =>
      acting || query.state.data?.some((computer) => isTransitional(computer.state))
        ? SETTLING_POLL_MS
        : LIVE_POLL_MS,
  });
}

export function useComputer(workspaceId: string, computerId: string) {
  const acting = useIsMutating({ mutationKey: computerActionKey(computerId) }) > 0;
  return useQuery({
    queryKey: computerKey(workspaceId, computerId),
    queryFn: () =>
      unwrap(
        api.GET("/v1/workspaces/{workspaceId}/computers/{computerId}", {
          params: { path: { workspaceId, computerId } },
        }),
      ),
    // A start answers only once the machine runs; meanwhile the record shows `booting`.
    refetchInterval: (query) =>
      acting || (query.state.data && isTransitional(query.state.data.state))
        ? SETTLING_POLL_MS
        : LIVE_POLL_MS,
  });
}

/** Puts a computer the api just answered with into the caches of the page and the list. */
export function storeComputer(client: QueryClient, computer: Computer) {
  client.setQueryData(computerKey(computer.workspaceId, computer.id), computer);
  client.setQueryData<Computer[]>(computersKey(computer.workspaceId), (list) =>
    list?.map((one) => (one.id === computer.id ? computer : one)),
  );
}
