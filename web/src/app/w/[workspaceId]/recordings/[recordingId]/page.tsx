"use client";

import { useParams, useSearchParams } from "next/navigation";
import { Suspense } from "react";
import { RecordingPage } from "@/recordings/recording-page.tsx";

export default function Page() {
  return (
    // ?at= is in the query string, which is known only in the browser
    <Suspense>
      <Recording />
    </Suspense>
  );
}

function Recording() {
  const { workspaceId, recordingId } = useParams<{ workspaceId: string; recordingId: string }>();
  const at = Number(useSearchParams().get("at") ?? 0);
  return (
    <RecordingPage
      // another recording, another player
      key={recordingId}
      workspaceId={workspaceId}
      recordingId={recordingId}
      startAt={Number.isFinite(at) && at > 0 ? at : 0}
    />
  );
}
