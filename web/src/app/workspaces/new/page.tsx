"use client";

import Link from "next/link";
import { SignedIn } from "@/auth/signed-in.tsx";
import { CreateWorkspaceForm } from "@/workspaces/create-workspace-form.tsx";

export default function NewWorkspacePage() {
  return (
    <SignedIn>
      {(me) => (
        <main className="auth-page">
          <div className="card stack">
            <div className="brand">Cubicle</div>
            <h1>New workspace</h1>
            <p className="muted">Signed in as {me.email}.</p>
            <CreateWorkspaceForm />
            <p className="small">
              Invited to a team? <Link href="/invitations">See your invitations</Link>
            </p>
          </div>
        </main>
      )}
    </SignedIn>
  );
}
