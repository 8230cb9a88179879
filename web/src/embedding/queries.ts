"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "@/api/client.ts";

const embedOriginsKey = (workspaceId: string) => ["workspaces", workspaceId, "embed-origins"] as const;

export function useEmbedOrigins(workspaceId: string) {
  return useQuery({
    queryKey: embedOriginsKey(workspaceId),
    queryFn: () =>
      unwrap(api.GET("/v1/workspaces/{workspaceId}/embed-origins", { params: { path: { workspaceId } } })),
  });
}

/** Replaces the whole list (the api keeps no other shape); an add or a removal sends the list it makes. */
export function useSetEmbedOrigins(workspaceId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (origins: string[]) =>
      unwrap(
        api.PUT("/v1/workspaces/{workspaceId}/embed-origins", {
          params: { path: { workspaceId } },
          body: { origins },
        }),
      ),
    onSuccess: (saved) => {
      client.setQueryData(embedOriginsKey(workspaceId), saved);
      // the change is in the audit trail
      return client.invalidateQueries({ queryKey: ["audit"] });
    },
  });
}
