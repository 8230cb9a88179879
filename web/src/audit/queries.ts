"use client";

import { useInfiniteQuery } from "@tanstack/react-query";
import { api, type Schema, unwrap } from "@/api/client.ts";
import type { AuditQuery } from "./filters.ts";

export type AuditEvent = Schema<"AuditEvent">;

/** Pages of the trail, newest first; each page names the cursor of the next (older) one. */
export function useAuditEvents(workspaceId: string, query: Omit<AuditQuery, "cursor">) {
  return useInfiniteQuery({
    queryKey: ["audit", workspaceId, query],
    queryFn: ({ pageParam }) =>
      unwrap(
        api.GET("/v1/workspaces/{workspaceId}/audit-events", {
          params: { path: { workspaceId }, query: pageParam ? { ...query, cursor: pageParam } : query },
        }),
      ),
    initialPageParam: null as string | null,
    getNextPageParam: (page) => page.nextCursor,
  });
}
