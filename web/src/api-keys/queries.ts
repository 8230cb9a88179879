"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, type Schema, unwrap } from "@/api/client.ts";
import type { Role } from "@/workspaces/queries.ts";

export type ApiKey = Schema<"ApiKey">;
export type CreatedApiKey = Schema<"CreatedApiKey">;

/** Members and above may make, list and revoke keys (members their own; admins all). */
export const USE_API_KEYS: Role = "member";

export const apiKeysKey = (workspaceId: string) => ["api-keys", workspaceId] as const;

export function useApiKeys(workspaceId: string) {
  return useQuery({
    queryKey: apiKeysKey(workspaceId),
    queryFn: async () =>
      (await unwrap(api.GET("/v1/workspaces/{workspaceId}/api-keys", { params: { path: { workspaceId } } })))
        .items,
  });
}

export function useCreateApiKey(workspaceId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: Schema<"CreateApiKey">) =>
      unwrap(api.POST("/v1/workspaces/{workspaceId}/api-keys", { params: { path: { workspaceId } }, body })),
    onSuccess: () => client.invalidateQueries({ queryKey: apiKeysKey(workspaceId) }),
  });
}

export function useRevokeApiKey(workspaceId: string, keyId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: () =>
      unwrap(
        api.DELETE("/v1/workspaces/{workspaceId}/api-keys/{keyId}", {
          params: { path: { workspaceId, keyId } },
        }),
      ),
    onSuccess: () => client.invalidateQueries({ queryKey: apiKeysKey(workspaceId) }),
  });
}
