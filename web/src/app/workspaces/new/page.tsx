"use client";

import Link from "next/link";
import { SignedIn } from "@/auth/signed-in.tsx";
import { CardPage } from "@/ui/card-page.tsx";
import { CreateWorkspaceForm } from "@/workspaces/create-workspace-form.tsx";

export default function NewWorkspacePage() {
  return (
    <SignedIn>
      {(me) => (
        <CardPage title="New workspace">
          <p className="muted">Signed in as {me.email}.</p>
          <CreateWorkspaceForm />
          <p className="small">
            Invited to a team? <Link href="/invitations">See your invitations</Link>
          </p>
        </CardPage>
      )}
    </SignedIn>
  );
}
