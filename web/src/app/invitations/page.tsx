"use client";

import Link from "next/link";
import { SignedIn } from "@/auth/signed-in.tsx";
import { MyInvitations } from "@/members/my-invitations.tsx";

export default function InvitationsPage() {
  return (
    <SignedIn>
      {(me) => (
        <main className="auth-page">
          <div className="card stack">
            <div className="brand">Cubicle</div>
            <h1>Invitations</h1>
            <p className="muted">Workspaces that invited {me.email}.</p>
            <MyInvitations />
            <p className="small">
              <Link href="/">Go to your workspaces</Link> or <Link href="/workspaces/new">create one</Link>.
            </p>
          </div>
        </main>
      )}
    </SignedIn>
  );
}
