"use client";

import type { ReactNode } from "react";
import { ErrorNote, Loading } from "@/ui/feedback.tsx";
import { atLeast, ROLES, type Role, useWorkspace, useWorkspaces } from "@/workspaces/queries.ts";

export const ROLE_LABELS: Record<Role, string> = {
  viewer: "Viewer",
  member: "Member",
  admin: "Admin",
  owner: "Owner",
};

/** "admins and owners": who a minimum role lets in, in words. */
const WHO: Record<Role, string> = {
  viewer: "everyone in the workspace",
  member: "members, admins and owners",
  admin: "admins and owners",
  owner: "owners",
};

/** Roles the caller may hand out to a member, an invitation or an API key: never above their own. */
export function grantableRoles(callerRole: Role): Role[] {
  return ROLES.filter((role) => atLeast(callerRole, role));
}

export function RoleSelect({
  id,
  value,
  roles,
  onChange,
  disabled,
  label,
}: {
  id: string;
  value: Role;
  roles: readonly Role[];
  onChange: (role: Role) => void;
  disabled?: boolean;
  /** An accessible name when no visible <label> points at the select (in a table row). */
  label?: string;
}) {
  return (
    <select
      id={id}
      aria-label={label}
      value={value}
      disabled={disabled}
      onChange={(event) => {
        const role = roles.find((candidate) => candidate === event.target.value);
        if (role) onChange(role);
      }}
    >
      {roles.map((role) => (
        <option key={role} value={role}>
          {ROLE_LABELS[role]}
        </option>
      ))}
    </select>
  );
}

/** Why a control is missing: the api would refuse it for this role, so the page says so instead. */
export function RoleRequired({ role, minimum, action }: { role: Role; minimum: Role; action: string }) {
  return (
    <p className="notice" role="note">
      Only {WHO[minimum]} can {action}. Your role in this workspace is {ROLE_LABELS[role].toLowerCase()}.
    </p>
  );
}

/** Renders its children once the caller's role in the page's workspace is known: what a page offers depends on it. */
export function WithRole({ children }: { children: (role: Role) => ReactNode }) {
  const { role } = useWorkspace();
  const workspaces = useWorkspaces();
  if (workspaces.error)
    return <ErrorNote error={workspaces.error} prefix="Your workspaces could not be loaded" />;
  if (!workspaces.data) return <Loading what="your role" />;
  if (!role)
    return (
      <p className="notice warning" role="note">
        You are not a member of this workspace. Pick one of yours in the workspace menu.
      </p>
    );
  return <>{children(role)}</>;
}
