"use client";

import { useEffect } from "react";
import { api } from "@/api/client.ts";

/**
 * Idle suspension (SANDBOX_IDLE_MS, ten minutes by default) counts activity, not watchers: while
 * someone looks at a computer's live screens the page says so every minute, well inside that, and
 * at once when its tab is shown again.
 */
const HEARTBEAT_MS = 60_000;

export function useComputerHeartbeat(workspaceId: string, computerId: string, watching: boolean) {
  useEffect(() => {
    if (!watching) return;
    const beat = () => {
      // a tab nobody looks at is not watching: a forgotten one must not keep the computer awake
      if (document.visibilityState !== "visible") return;
      // A missed beat is harmless (the next one counts), so failures are not shown.
      void api
        .POST("/v1/workspaces/{workspaceId}/computers/{computerId}/heartbeat", {
          params: { path: { workspaceId, computerId } },
        })
        .catch(() => undefined);
    };
    beat();
    const timer = setInterval(beat, HEARTBEAT_MS);
    document.addEventListener("visibilitychange", beat);
    return () => {
      clearInterval(timer);
      document.removeEventListener("visibilitychange", beat);
    };
  }, [workspaceId, computerId, watching]);
}
