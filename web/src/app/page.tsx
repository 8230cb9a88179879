"use client";

import { useRouter } from "next/navigation";
import { useEffect } from "react";
import { SignedIn } from "@/auth/signed-in.tsx";
import { ErrorNote, Loading } from "@/ui/feedback.tsx";
import { useWorkspaces } from "@/workspaces/queries.ts";

function FirstWorkspace() {
  const router = useRouter();
  const workspaces = useWorkspaces();
  useEffect(() => {
    if (!workspaces.data) return;
    const first = workspaces.data[0];
    router.replace(first ? `/w/${first.id}/computers` : "/workspaces/new");
  }, [workspaces.data, router]);
  return (
    <main>
      {workspaces.error ? <ErrorNote error={workspaces.error} /> : <Loading what="your workspaces" />}
    </main>
  );
}

export default function HomePage() {
  return <SignedIn>{() => <FirstWorkspace />}</SignedIn>;
}
