"use client";

import { useRouter } from "next/navigation";
import { EmptyState, ErrorNote, Loading } from "@/ui/feedback.tsx";
import { Time } from "@/ui/time.tsx";
import { type Invitation, useAcceptInvitation, useMyInvitations } from "./invitation-queries.ts";
import styles from "./members.module.css";
import { ROLE_LABELS } from "./roles.tsx";

/** Invitations addressed to the signed-in person; accepting one opens its workspace. */
export function MyInvitations() {
  const invitations = useMyInvitations();
  if (invitations.error)
    return <ErrorNote error={invitations.error} prefix="Your invitations could not be loaded" />;
  if (!invitations.data) return <Loading what="your invitations" />;
  if (invitations.data.length === 0)
    return (
      <EmptyState title="No pending invitations">
        <p>When someone invites this email address to a workspace, the invitation shows up here.</p>
      </EmptyState>
    );
  return (
    <ul className={`stack ${styles.plainList}`} aria-label="Pending invitations">
      {invitations.data.map((invitation) => (
        <InvitationItem key={invitation.id} invitation={invitation} />
      ))}
    </ul>
  );
}

function InvitationItem({ invitation }: { invitation: Invitation }) {
  const router = useRouter();
  const accept = useAcceptInvitation(invitation.id);
  return (
    <li className="card stack">
      <div>
        <strong>{invitation.workspaceName}</strong>
        <p className="small muted">
          As {ROLE_LABELS[invitation.role].toLowerCase()}; expires <Time iso={invitation.expiresAt} />
        </p>
      </div>
      <ErrorNote error={accept.error} prefix="Not accepted" />
      <div className="row">
        <button
          type="button"
          className="primary"
          disabled={accept.isPending}
          onClick={() =>
            accept.mutate(undefined, {
              onSuccess: (membership) => router.push(`/w/${membership.workspaceId}/computers`),
            })
          }
        >
          Accept
        </button>
      </div>
    </li>
  );
}
