"use client";

import { useMe } from "@/auth/session.ts";
import { EmptyState, ErrorNote, Loading } from "@/ui/feedback.tsx";
import { atLeast, type Role } from "@/workspaces/queries.ts";
import { MemberRow } from "./member-row.tsx";
import { useMembers } from "./queries.ts";

export function MemberList({ workspaceId, callerRole }: { workspaceId: string; callerRole: Role }) {
  const members = useMembers(workspaceId);
  const me = useMe();
  const canManage = atLeast(callerRole, "admin");
  if (members.error) return <ErrorNote error={members.error} prefix="The members could not be loaded" />;
  if (!members.data) return <Loading what="members" />;
  if (members.data.length === 0) return <EmptyState title="No members" />;
  return (
    <div className="table-wrap">
      <table aria-label="Members">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Email</th>
            <th scope="col">Role</th>
            <th scope="col">Joined</th>
            {canManage ? <th scope="col">Actions</th> : null}
          </tr>
        </thead>
        <tbody>
          {members.data.map((member) => (
            <MemberRow
              key={member.id}
              workspaceId={workspaceId}
              member={member}
              callerRole={callerRole}
              isMe={member.userId === me.data?.userId}
            />
          ))}
        </tbody>
      </table>
    </div>
  );
}
