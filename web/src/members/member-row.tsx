"use client";

import { useRouter } from "next/navigation";
import { ConfirmButton } from "@/ui/confirm.tsx";
import { ErrorNote } from "@/ui/feedback.tsx";
import { Time } from "@/ui/time.tsx";
import { atLeast, type Role } from "@/workspaces/queries.ts";
import { type Member, useChangeRole, useRemoveMember } from "./queries.ts";
import { grantableRoles, ROLE_LABELS, RoleSelect } from "./roles.tsx";

export function MemberRow({
  workspaceId,
  member,
  callerRole,
  isMe,
}: {
  workspaceId: string;
  member: Member;
  callerRole: Role;
  isMe: boolean;
}) {
  const router = useRouter();
  const changeRole = useChangeRole(workspaceId, member.id);
  const remove = useRemoveMember(workspaceId, member.id);
  const canManage = atLeast(callerRole, "admin");
  // Only an owner may change or remove an owner; the api refuses anyone else.
  const mayChange = canManage && (member.role !== "owner" || callerRole === "owner");
  return (
    <tr>
      <td>
        {member.name}
        {isMe ? <span className="muted"> (you)</span> : null}
      </td>
      <td>{member.email}</td>
      <td>
        {mayChange ? (
          <RoleSelect
            id={`role-${member.id}`}
            label={`Role of ${member.name}`}
            value={member.role}
            roles={grantableRoles(callerRole)}
            disabled={changeRole.isPending}
            onChange={(role) => changeRole.mutate(role)}
          />
        ) : (
          ROLE_LABELS[member.role]
        )}
        <ErrorNote error={changeRole.error} prefix="Role not changed" />
      </td>
      <td>
        <Time iso={member.joinedAt} />
      </td>
      {canManage ? (
        <td>
          {mayChange ? (
            <ConfirmButton
              label="Remove"
              name={`Remove ${member.name}`}
              title={isMe ? "Leave this workspace?" : `Remove ${member.name}?`}
              confirmLabel="Remove member"
              danger
              disabled={remove.isPending}
              onConfirm={() =>
                // Someone who removed themselves can no longer see this workspace.
                remove.mutate(undefined, { onSuccess: () => (isMe ? router.push("/") : undefined) })
              }
            >
              <p>
                {isMe
                  ? "You will lose access to this workspace until someone invites you again."
                  : `${member.name} (${member.email}) loses access to this workspace. API keys they made stop working.`}
              </p>
            </ConfirmButton>
          ) : (
            <span className="small muted">Only an owner can change an owner.</span>
          )}
          <ErrorNote error={remove.error} prefix="Not removed" />
        </td>
      ) : null}
    </tr>
  );
}
