"use client";

import { type FormEvent, useId, useState } from "react";
import { ErrorNote } from "@/ui/feedback.tsx";
import type { Role } from "@/workspaces/queries.ts";
import { useInvite } from "./invitation-queries.ts";
import { grantableRoles, RoleSelect } from "./roles.tsx";

export function InviteForm({ workspaceId, callerRole }: { workspaceId: string; callerRole: Role }) {
  const id = useId();
  const invite = useInvite(workspaceId);
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<Role>("member");
  const [invited, setInvited] = useState<string | null>(null);
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    setInvited(null);
    invite.mutate(
      { email, role },
      {
        onSuccess: (invitation) => {
          setInvited(invitation.email);
          setEmail("");
        },
      },
    );
  };
  return (
    <form className="card stack" onSubmit={onSubmit} aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>Invite someone</h3>
      <div className="grid-2">
        <div className="field">
          <label htmlFor={`${id}-email`}>Email address</label>
          <input
            id={`${id}-email`}
            type="email"
            required
            maxLength={254}
            autoComplete="off"
            value={email}
            onChange={(e) => setEmail(e.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor={`${id}-role`}>Invite as</label>
          <RoleSelect id={`${id}-role`} value={role} roles={grantableRoles(callerRole)} onChange={setRole} />
        </div>
      </div>
      <p className="small muted">
        They sign up or sign in with this email address and accept on their Invitations page (
        <code>/invitations</code>).
      </p>
      <ErrorNote error={invite.error} prefix="Not invited" />
      <div className="row">
        <button type="submit" className="primary" disabled={invite.isPending}>
          Invite
        </button>
        <span role="status" className="muted">
          {invite.isPending ? "Inviting…" : invited ? `Invited ${invited}.` : null}
        </span>
      </div>
    </form>
  );
}
