"use client";

import { useQuery } from "@tanstack/react-query";
import { api, type Schema, unwrap } from "@/api/client.ts";

export type Session = Schema<"Session">;

/** Sessions open and not expired, oldest first; they come and go without this page, so it polls. */
export function useOpenSessions(workspaceId: string) {
  return useQuery({
    queryKey: ["workspaces", workspaceId, "sessions"],
    queryFn: async () =>
      (await unwrap(api.GET("/v1/workspaces/{workspaceId}/sessions", { params: { path: { workspaceId } } })))
        .items,
    refetchInterval: 10_000,
  });
}
