"use client";

import { useInfiniteQuery } from "@tanstack/react-query";
import { api, type Schema, unwrap } from "@/api/client.ts";
import type { AuditQuery } from "./filters.ts";

export type AuditEvent = Schema<"AuditEvent">;

/** Whose trail: one workspace's, or (for the deployment owner) the whole deployment's, sign-ups included. */
export type AuditScope = "workspace" | "deployment";

/** Pages of the trail, newest first; each page names the cursor of the next (older) one. */
export function useAuditEvents(
  workspaceId: string,
  query: Omit<AuditQuery, "cursor">,
  scope: AuditScope,
  poll: boolean,
) {
  return useInfiniteQuery({
    queryKey: ["audit", scope, workspaceId, query],
    queryFn: ({ pageParam }) => {
      const page = pageParam ? { ...query, cursor: pageParam } : query;
      return scope === "deployment"
        ? unwrap(api.GET("/v1/deployment/audit-events", { params: { query: page } }))
        : unwrap(
            api.GET("/v1/workspaces/{workspaceId}/audit-events", {
              params: { path: { workspaceId }, query: page },
            }),
          );
    },
    initialPageParam: null as string | null,
    getNextPageParam: (page) => page.nextCursor,
    // every loaded page is fetched again on each tick, so only trails beside live work poll; kept
    // with live events followed, since most audit actions (tool calls, files, keys) are no events
    refetchInterval: poll ? 15_000 : false,
  });
}
