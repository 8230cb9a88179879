"use client";

import { useParams } from "next/navigation";
import { ScreenViewer } from "@/screens/screen-viewer.tsx";
import { PageHeader } from "@/ui/app-shell.tsx";

export default function Page() {
  const { workspaceId } = useParams<{ workspaceId: string }>();
  return (
    <>
      <PageHeader title="computers" />
      <ScreenViewer workspaceId={workspaceId} computerId="x" screen={0} mode="view" label="probe" />
    </>
  );
}
