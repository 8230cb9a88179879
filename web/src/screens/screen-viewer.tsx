"use client";

import type RFB from "@novnc/novnc";
import { type ReactNode, useEffect, useRef, useState } from "react";
import { api, Problem, unwrap } from "@/api/client.ts";
import { ScreenClipboard } from "./screen-clipboard.tsx";
import styles from "./screens.module.css";

export type ScreenMode = "view" | "control";
type ViewerStatus = "connecting" | "connected" | "reconnecting" | "failed";

// A dropped socket (computer restarting, capability expired, proxy restarted) is opened again with a
// fresh capability, waiting a little longer each time.
const RETRY_DELAYS_MS = [500, 1_000, 2_000, 4_000, 8_000];

/**
 * One live screen through the screen proxy: asks the api for a single-use capability for exactly
 * this (computer, screen, mode) and hands it to noVNC as a WebSocket subprotocol, never in the URL.
 * In `view` mode input is never sent; `control` needs the caller's control lease on the screen.
 * A change of mode opens a new socket with a new capability, so a released screen is view-only
 * at once (the proxy closes the control socket too).
 *
 * While someone types into a controlled screen, noVNC takes every key (Tab too); Shift+Escape gives
 * the keyboard back to the page. A controlled screen also gets a clipboard box; a viewed one has
 * none, since view sockets never carry the clipboard.
 *
 * `children` are laid over the picture (a thumbnail's "show this screen" button), inside the
 * figure, so that the figure (with `data-testid`, `data-status`, `data-mode`) is what gets clicked.
 */
export function ScreenViewer({
  workspaceId,
  computerId,
  screen,
  mode,
  label,
  testId,
  epoch,
  children,
}: {
  workspaceId: string;
  computerId: string;
  screen: number;
  mode: ScreenMode;
  label: string;
  testId?: string;
  /**
   * Changes when the machine behind the screen may have changed (the computer's `updatedAt` moves with
   * every state change): the viewer then connects afresh, with a fresh set of retries.
   */
  epoch?: string;
  children?: ReactNode;
}) {
  const target = useRef<HTMLDivElement>(null);
  const client = useRef<RFB | null>(null);
  const typeButton = useRef<HTMLButtonElement>(null);
  const [status, setStatus] = useState<ViewerStatus>("connecting");
  const [error, setError] = useState<string | null>(null);
  // what the computer last put on its clipboard (ServerCutText), while controlling it
  const [copied, setCopied] = useState<string | null>(null);
  // the proxy records this screen (this socket, or the session's recorder): the capability says so
  const [recorded, setRecorded] = useState(false);
  // Bumped by "Reconnect" after the retries gave up: the effect below starts over.
  const [generation, setGeneration] = useState(0);

  // biome-ignore lint/correctness/useExhaustiveDependencies: `generation` and `epoch` only restart the connection
  useEffect(() => {
    let rfb: RFB | null = null;
    let stopped = false;
    let attempt = 0;
    let refusal = "";
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
        setRecorded(capability.recorded);
        const socket = new Rfb(target.current, capability.url, {
          wsProtocols: [capability.protocol, capability.token],
        });
        rfb = socket;
        client.current = socket;
        socket.viewOnly = mode === "view";
        socket.scaleViewport = true;
        socket.background = "transparent";
        socket.addEventListener("connect", () => {
          attempt = 0;
          setError(null);
          setStatus("connected");
        });
        socket.addEventListener("clipboard", (event) => {
          setCopied((event as CustomEvent<{ text: string }>).detail.text);
        });
        socket.addEventListener("securityfailure", (event) => {
          refusal = (event as CustomEvent<{ reason?: string }>).detail?.reason ?? "";
        });
        socket.addEventListener("disconnect", () => {
          // a late event of an earlier socket must not forget the current one
          if (rfb === socket) rfb = null;
          if (client.current === socket) client.current = null;
          retry(
            refusal ? `The screen refused the connection: ${refusal}` : "The screen's connection closed.",
          );
          refusal = "";
        });
      } catch (cause) {
        // a refusal (403 role, 404 gone) stays a refusal: say why instead of asking again
        if (cause instanceof Problem && cause.status < 500 && cause.status !== 409) {
          setError(cause.detail);
          setStatus("failed");
          return;
        }
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

    // Shift+Escape leaves a screen that has the keyboard (captured before noVNC sees the key)
    const stage = target.current;
    const leave = (event: KeyboardEvent) => {
      if (event.key !== "Escape" || !event.shiftKey) return;
      event.preventDefault();
      event.stopPropagation();
      client.current?.blur();
      typeButton.current?.focus();
    };
    stage?.addEventListener("keydown", leave, true);

    setStatus("connecting");
    setCopied(null);
    setRecorded(false);
    void connect();
    return () => {
      stopped = true;
      clearTimeout(timer);
      stage?.removeEventListener("keydown", leave, true);
      rfb?.disconnect();
      client.current = null;
    };
  }, [workspaceId, computerId, screen, mode, generation, epoch]);

  const controlling = mode === "control";
  return (
    <figure className="screen" data-status={status} data-mode={mode} data-testid={testId}>
      <div className={styles.stage}>
        {/* one element either way (React keeps it): noVNC's canvas lives inside */}
        {controlling ? (
          <div
            ref={target}
            className="screen-canvas"
            role="application"
            aria-label={`${label} (you control it; Shift+Escape leaves it)`}
          />
        ) : (
          <div ref={target} className="screen-canvas" role="img" aria-label={`${label} (view only)`} />
        )}
        {children}
      </div>
      <figcaption className="row small">
        <span>{label}</span>
        <span
          className={`badge ${status === "connected" ? "ok" : status === "failed" ? "danger" : "warn"}`}
          role="status"
        >
          {status === "connected" ? (controlling ? "Live · controlling" : "Live · view only") : status}
        </span>
        {recorded ? (
          <span
            className={`badge danger ${styles.recording}`}
            title="What this screen shows is being recorded"
          >
            ● Recording
          </span>
        ) : null}
        {error && status !== "connected" ? <span className="muted">{error}</span> : null}
        {status === "failed" ? (
          <button type="button" onClick={() => setGeneration((n) => n + 1)}>
            Reconnect
          </button>
        ) : null}
        {controlling && status === "connected" ? (
          // The canvas is not in the tab order (noVNC's choice); keyboard users get here instead.
          <>
            <button type="button" ref={typeButton} onClick={() => client.current?.focus()}>
              Type into the screen
            </button>
            <span className="muted">Shift+Esc gives the keyboard back.</span>
          </>
        ) : null}
      </figcaption>
      {controlling && status === "connected" ? (
        <ScreenClipboard
          copied={copied}
          paste={(text) => {
            if (!client.current) return false;
            client.current.clipboardPasteFrom(text);
            return true;
          }}
        />
      ) : null}
    </figure>
  );
}
