"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, type Schema, unwrap } from "@/api/client.ts";
import { workspacesKey } from "@/workspaces/queries.ts";

export type Invitation = Schema<"Invitation">;

const invitationsKey = (workspaceId: string) => ["invitations", workspaceId] as const;
const myInvitationsKey = ["my-invitations"] as const;

/** Still open: pending and not expired (the api lists answered and expired ones too). */
export const isOpen = (invitation: Invitation, now = Date.now()) =>
  invitation.status === "pending" && new Date(invitation.expiresAt).getTime() > now;

/** The workspace's invitations; only admins and owners may list them. */
export function useInvitations(workspaceId: string) {
  return useQuery({
    queryKey: invitationsKey(workspaceId),
    queryFn: async () =>
      (
        await unwrap(
          api.GET("/v1/workspaces/{workspaceId}/invitations", { params: { path: { workspaceId } } }),
        )
      ).items,
  });
}

export function useInvite(workspaceId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: Schema<"CreateInvitation">) =>
      unwrap(
        api.POST("/v1/workspaces/{workspaceId}/invitations", { params: { path: { workspaceId } }, body }),
      ),
    onSuccess: () => client.invalidateQueries({ queryKey: invitationsKey(workspaceId) }),
  });
}

export function useCancelInvitation(workspaceId: string, invitationId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: () =>
      unwrap(
        api.DELETE("/v1/workspaces/{workspaceId}/invitations/{invitationId}", {
          params: { path: { workspaceId, invitationId } },
        }),
      ),
    onSuccess: () => client.invalidateQueries({ queryKey: invitationsKey(workspaceId) }),
  });
}

/** Pending invitations addressed to the signed-in person. */
export function useMyInvitations() {
  return useQuery({
    queryKey: myInvitationsKey,
    queryFn: async () => (await unwrap(api.GET("/v1/invitations"))).items,
  });
}

export function useAcceptInvitation(invitationId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: () =>
      unwrap(api.POST("/v1/invitations/{invitationId}/accept", { params: { path: { invitationId } } })),
    // The new workspace must be in the list before its pages ask for the person's role in it.
    onSuccess: () =>
      Promise.all([
        client.invalidateQueries({ queryKey: workspacesKey }),
        client.invalidateQueries({ queryKey: myInvitationsKey }),
      ]),
  });
}
