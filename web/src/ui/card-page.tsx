import type { ReactNode } from "react";

/** A page outside any workspace (sign-in, a new workspace, invitations): one card, centred. */
export function CardPage({ title, children }: { title: string; children: ReactNode }) {
  return (
    <main className="auth-page">
      <div className="card stack">
        <div>
          <div className="brand">Cubicle</div>
          <h1>{title}</h1>
        </div>
        {children}
      </div>
    </main>
  );
}
