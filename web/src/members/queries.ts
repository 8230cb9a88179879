"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, type Schema, unwrap } from "@/api/client.ts";
import { apiKeysKey } from "@/api-keys/queries.ts";
import { type Role, workspacesKey } from "@/workspaces/queries.ts";

export type Member = Schema<"Member">;

const membersKey = (workspaceId: string) => ["members", workspaceId] as const;

export function useMembers(workspaceId: string) {
  return useQuery({
    queryKey: membersKey(workspaceId),
    queryFn: async () =>
      (await unwrap(api.GET("/v1/workspaces/{workspaceId}/members", { params: { path: { workspaceId } } })))
        .items,
  });
}

/**
 * Shown at once (a role is one field and the api answers with the member as it now is); put back if
 * the api refuses, e.g. the last owner.
 */
export function useChangeRole(workspaceId: string, memberId: string) {
  const client = useQueryClient();
  const key = membersKey(workspaceId);
  return useMutation({
    mutationFn: (role: Role) =>
      unwrap(
        api.PATCH("/v1/workspaces/{workspaceId}/members/{memberId}", {
          params: { path: { workspaceId, memberId } },
          body: { role },
        }),
      ),
    onMutate: async (role) => {
      await client.cancelQueries({ queryKey: key });
      const previous = client.getQueryData<Member[]>(key);
      client.setQueryData<Member[]>(key, (members) =>
        members?.map((member) => (member.id === memberId ? { ...member, role } : member)),
      );
      return { previous };
    },
    onError: (_error, _role, saved) => client.setQueryData(key, saved?.previous),
    // The caller's own role may be the one that changed, and pages decide what to show from it.
    onSettled: () =>
      Promise.all([
        client.invalidateQueries({ queryKey: key }),
        client.invalidateQueries({ queryKey: workspacesKey }),
      ]),
  });
}

export function useRemoveMember(workspaceId: string, memberId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: () =>
      unwrap(
        api.DELETE("/v1/workspaces/{workspaceId}/members/{memberId}", {
          params: { path: { workspaceId, memberId } },
        }),
      ),
    // a removed member's API keys stop working with them
    onSuccess: () =>
      Promise.all([
        client.invalidateQueries({ queryKey: membersKey(workspaceId) }),
        client.invalidateQueries({ queryKey: workspacesKey }),
        client.invalidateQueries({ queryKey: apiKeysKey(workspaceId) }),
      ]),
  });
}
