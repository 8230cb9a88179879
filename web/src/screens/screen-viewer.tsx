"use client";

import type RFB from "@novnc/novnc";
import { useEffect, useRef, useState } from "react";
import { api, unwrap } from "@/api/client.ts";

export type ScreenMode = "view" | "control";
export type ViewerStatus = "connecting" | "connected" | "reconnecting" | "failed";

// A dropped socket (computer restarting, capability expired, proxy restarted) is opened again with a
// fresh capability, waiting a little longer each time.
const RETRY_DELAYS_MS = [500, 1_000, 2_000, 4_000, 8_000];

/**
 * One live screen through the screen proxy: asks the api for a single-use capability for exactly
 * this (computer, screen, mode) and hands it to noVNC as a WebSocket subprotocol, never in the URL.
 * In `view` mode input is never sent; `control` needs the caller's control lease on the screen.
 */
export function ScreenViewer({
  workspaceId,
  computerId,
  screen,
  mode,
  label,
  className,
}: {
  workspaceId: string;
  computerId: string;
  screen: number;
  mode: ScreenMode;
  label: string;
  className?: string;
}) {
  const target = useRef<HTMLDivElement>(null);
  const [status, setStatus] = useState<ViewerStatus>("connecting");
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let rfb: RFB | null = null;
    let stopped = false;
    let attempt = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;

    const connect = async () => {
      if (stopped || !target.current) return;
      try {
        const [{ default: Rfb }, capability] = await Promise.all([
          import("@novnc/novnc"),
          unwrap(
            api.POST("/v1/workspaces/{workspaceId}/computers/{computerId}/screens/{index}/capabilities", {
              params: { path: { workspaceId, computerId, index: String(screen) } },
              body: { mode },
            }),
          ),
        ]);
        if (stopped || !target.current) return;
        rfb = new Rfb(target.current, capability.url, {
          wsProtocols: [capability.protocol, capability.token],
        });
        rfb.viewOnly = mode === "view";
        rfb.scaleViewport = true;
        rfb.background = "transparent";
        rfb.addEventListener("connect", () => {
          attempt = 0;
          setError(null);
          setStatus("connected");
        });
        rfb.addEventListener("disconnect", () => {
          rfb = null;
          retry("The screen's connection closed.");
        });
      } catch (cause) {
        retry(cause instanceof Error ? cause.message : String(cause));
      }
    };
    const retry = (why: string) => {
      if (stopped) return;
      const delay = RETRY_DELAYS_MS[attempt];
      attempt += 1;
      setError(why);
      if (delay === undefined) {
        setStatus("failed");
        return;
      }
      setStatus("reconnecting");
      timer = setTimeout(connect, delay);
    };

    setStatus("connecting");
    void connect();
    return () => {
      stopped = true;
      clearTimeout(timer);
      rfb?.disconnect();
    };
  }, [workspaceId, computerId, screen, mode]);

  return (
    <figure className={`screen ${className ?? ""}`} data-status={status} data-mode={mode}>
      <div
        ref={target}
        className="screen-canvas"
        role="img"
        aria-label={`${label} (${mode === "control" ? "you control it" : "view only"})`}
      />
      <figcaption className="row small">
        <span>{label}</span>
        <span
          className={`badge ${status === "connected" ? "ok" : status === "failed" ? "danger" : "warn"}`}
          role="status"
        >
          {status === "connected" ? (mode === "control" ? "Live · controlling" : "Live · view only") : status}
        </span>
        {error && status !== "connected" ? <span className="muted">{error}</span> : null}
      </figcaption>
    </figure>
  );
}
