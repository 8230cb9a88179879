"use client";

import { ConfirmButton } from "@/ui/confirm.tsx";
import { EmptyState, ErrorNote, Loading } from "@/ui/feedback.tsx";
import { Time } from "@/ui/time.tsx";
import { type Invitation, isOpen, useCancelInvitation, useInvitations } from "./invitation-queries.ts";
import { ROLE_LABELS } from "./roles.tsx";

export function PendingInvitations({ workspaceId }: { workspaceId: string }) {
  const invitations = useInvitations(workspaceId);
  if (invitations.error)
    return <ErrorNote error={invitations.error} prefix="The invitations could not be loaded" />;
  if (!invitations.data) return <Loading what="invitations" />;
  const pending = invitations.data.filter((invitation) => isOpen(invitation));
  if (pending.length === 0) return <EmptyState title="No pending invitations" />;
  return (
    <div className="table-wrap">
      <table aria-label="Pending invitations">
        <thead>
          <tr>
            <th scope="col">Email</th>
            <th scope="col">Role</th>
            <th scope="col">Invited</th>
            <th scope="col">Expires</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {pending.map((invitation) => (
            <InvitationRow key={invitation.id} workspaceId={workspaceId} invitation={invitation} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function InvitationRow({ workspaceId, invitation }: { workspaceId: string; invitation: Invitation }) {
  const cancel = useCancelInvitation(workspaceId, invitation.id);
  return (
    <tr>
      <td>{invitation.email}</td>
      <td>{ROLE_LABELS[invitation.role]}</td>
      <td>
        <Time iso={invitation.createdAt} />
      </td>
      <td>
        <Time iso={invitation.expiresAt} />
      </td>
      <td>
        <ConfirmButton
          label="Cancel invitation"
          name={`Cancel invitation for ${invitation.email}`}
          title={`Cancel the invitation for ${invitation.email}?`}
          confirmLabel="Cancel the invitation"
          danger
          disabled={cancel.isPending}
          onConfirm={() => cancel.mutate()}
        >
          <p>They can no longer accept it. You can invite them again later.</p>
        </ConfirmButton>
        <ErrorNote error={cancel.error} prefix="Not canceled" />
      </td>
    </tr>
  );
}
