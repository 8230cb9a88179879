"use client";

import { useQuery } from "@tanstack/react-query";
import { useParams } from "next/navigation";
import { api, type Schema, unwrap } from "@/api/client.ts";

export type Workspace = Schema<"Workspace">;
export type Role = Workspace["role"];

/** Every workspace role, lowest first (the order a role select lists them in). */
export const ROLES = ["viewer", "member", "admin", "owner"] as const satisfies readonly Role[];

/** The role allows at least `minimum` (roles are ordered viewer < member < admin < owner). */
export function atLeast(role: Role | undefined, minimum: Role): boolean {
  return role !== undefined && ROLES.indexOf(role) >= ROLES.indexOf(minimum);
}

export const workspacesKey = ["workspaces"] as const;

export function useWorkspaces() {
  return useQuery({
    queryKey: workspacesKey,
    queryFn: async () => (await unwrap(api.GET("/v1/workspaces"))).items,
  });
}

/** The workspace of the current page (/w/[workspaceId]/…) and the caller's role in it. */
export function useWorkspace(): {
  workspaceId: string;
  workspace: Workspace | undefined;
  role: Role | undefined;
} {
  const { workspaceId } = useParams<{ workspaceId: string }>();
  const { data } = useWorkspaces();
  const workspace = data?.find((w) => w.id === workspaceId);
  return { workspaceId, workspace, role: workspace?.role };
}
