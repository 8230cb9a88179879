"use client";

import { useParams, useSearchParams } from "next/navigation";
import { Suspense } from "react";
import { RecordingsList } from "@/recordings/recordings-list.tsx";
import { PageHeader } from "@/ui/app-shell.tsx";

export default function Page() {
  return (
    <>
      <PageHeader
        title="Recordings"
        description="Take-overs and bots' sessions as they appeared on screen, to replay, download or export as video. Only admins and owners can see them; every playback and download is audited."
      />
      {/* the filter is in the query string, which is known only in the browser */}
      <Suspense>
        <FilteredList />
      </Suspense>
    </>
  );
}

function FilteredList() {
  const { workspaceId } = useParams<{ workspaceId: string }>();
  const query = useSearchParams();
  const filter = {
    computerId: query.get("computerId") ?? undefined,
    sessionId: query.get("sessionId") ?? undefined,
    controlLeaseId: query.get("controlLeaseId") ?? undefined,
  };
  return <RecordingsList workspaceId={workspaceId} filter={filter} />;
}
