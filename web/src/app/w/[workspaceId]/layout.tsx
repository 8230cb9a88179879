"use client";

import { useParams } from "next/navigation";
import type { ReactNode } from "react";
import { SignedIn } from "@/auth/signed-in.tsx";
import { LiveEvents } from "@/events/live-events.tsx";
import { AppShell } from "@/ui/app-shell.tsx";

export default function WorkspaceLayout({ children }: { children: ReactNode }) {
  const { workspaceId } = useParams<{ workspaceId: string }>();
  return (
    <SignedIn>
      {(me) => (
        <LiveEvents workspaceId={workspaceId}>
          <AppShell me={me} workspaceId={workspaceId}>
            {children}
          </AppShell>
        </LiveEvents>
      )}
    </SignedIn>
  );
}
