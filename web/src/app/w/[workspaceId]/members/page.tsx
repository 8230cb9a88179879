"use client";

import { InviteForm } from "@/members/invite-form.tsx";
import { MemberList } from "@/members/member-list.tsx";
import { PendingInvitations } from "@/members/pending-invitations.tsx";
import { RoleGuide } from "@/members/role-guide.tsx";
import { RoleRequired, WithRole } from "@/members/roles.tsx";
import { PageHeader } from "@/ui/app-shell.tsx";
import { atLeast, useWorkspace } from "@/workspaces/queries.ts";

export default function MembersPage() {
  const { workspaceId } = useWorkspace();
  return (
    <>
      <PageHeader title="Members" description="The people in this workspace and their roles." />
      <WithRole>
        {(role) => (
          <div className="stack">
            <RoleGuide />
            <MemberList workspaceId={workspaceId} callerRole={role} />
            {atLeast(role, "admin") ? (
              <section className="stack" aria-labelledby="invitations-title">
                <h2 id="invitations-title">Invitations</h2>
                <InviteForm workspaceId={workspaceId} callerRole={role} />
                <PendingInvitations workspaceId={workspaceId} />
              </section>
            ) : (
              <RoleRequired
                role={role}
                minimum="admin"
                action="change roles, remove members or invite people"
              />
            )}
          </div>
        )}
      </WithRole>
    </>
  );
}
