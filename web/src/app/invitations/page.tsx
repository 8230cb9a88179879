"use client";

import Link from "next/link";
import { SignedIn } from "@/auth/signed-in.tsx";
import { MyInvitations } from "@/members/my-invitations.tsx";
import { CardPage } from "@/ui/card-page.tsx";

export default function InvitationsPage() {
  return (
    <SignedIn>
      {(me) => (
        <CardPage title="Invitations">
          <p className="muted">Workspaces that invited {me.email}.</p>
          <MyInvitations />
          <p className="small">
            <Link href="/">Go to your workspaces</Link> or <Link href="/workspaces/new">create one</Link>.
          </p>
        </CardPage>
      )}
    </SignedIn>
  );
}
