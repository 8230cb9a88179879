"use client";

import { useQuery } from "@tanstack/react-query";
import { api, type Schema, unwrap } from "@/api/client.ts";
import { pollAtExpiry, useLive } from "@/events/live.ts";

export type Session = Schema<"Session">;

export const sessionsKey = (workspaceId: string) => ["workspaces", workspaceId, "sessions"] as const;

/**
 * Sessions open and not expired, oldest first. They come and go without this page: read again on
 * each session event (and just after an expiry shown, for the heartbeats that push it back), and
 * polled while events are not followed (a viewer, a lost stream).
 */
export function useOpenSessions(workspaceId: string) {
  const live = useLive();
  return useQuery({
    queryKey: sessionsKey(workspaceId),
    queryFn: async () =>
      (await unwrap(api.GET("/v1/workspaces/{workspaceId}/sessions", { params: { path: { workspaceId } } })))
        .items,
    refetchInterval: ({ state: { data = [] } }) =>
      live
        ? pollAtExpiry(
            data.map((session) => session.expiresAt),
            false,
          )
        : 10_000,
  });
}
