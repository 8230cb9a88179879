import type { ScreenMode } from "./protocol.ts";

export type ScreenState = "idle" | "connecting" | "live" | "view-only" | "controlled" | "ended" | "refused";

export interface ScreenParts {
  /** noVNC puts its canvas here. */
  stage: HTMLDivElement;
  status: HTMLDivElement;
}

/**
 * The element's children. Styles go through `element.style` (which a page's CSP allows) rather than
 * a <style> tag (which a strict CSP blocks); the class names are for pages that restyle them.
 */
export function renderScreenParts(host: HTMLElement): ScreenParts {
  const computed = getComputedStyle(host);
  // only where the page's own CSS left a custom element's defaults
  if (computed.display === "inline") host.style.display = "block";
  if (computed.position === "static") host.style.position = "relative";

  const stage = document.createElement("div");
  stage.className = "cubicle-screen-stage";
  stage.style.width = "100%";
  stage.style.height = "100%";

  const status = document.createElement("div");
  status.className = "cubicle-screen-status";
  status.setAttribute("role", "status");
  status.setAttribute("aria-live", "polite");
  Object.assign(status.style, {
    position: "absolute",
    left: "8px",
    bottom: "8px",
    padding: "2px 8px",
    borderRadius: "4px",
    background: "rgba(0, 0, 0, 0.7)",
    color: "#fff",
    font: "12px/1.5 system-ui, sans-serif",
    pointerEvents: "none",
  });

  host.replaceChildren(stage, status);
  return { stage, status };
}

function describe(state: ScreenState, reason: string | undefined): string {
  switch (state) {
    case "idle":
      return "Not connected";
    case "connecting":
      return reason === "reconnect" ? "Reconnecting…" : "Connecting…";
    case "live":
      return "Live: you control this screen";
    case "view-only":
      return "View only";
    case "controlled":
      return "Someone else is controlling this screen";
    case "ended":
      return reason === "control-ended" ? "Control ended" : "The screen session ended";
    case "refused":
      return "This screen could not be opened here";
  }
}

export function showState(
  host: HTMLElement,
  parts: ScreenParts,
  view: { state: ScreenState; reason: string | undefined; mode: ScreenMode | null; label: string | null },
): void {
  host.dataset.state = view.state;
  const text = describe(view.state, view.reason);
  if (parts.status.textContent !== text) parts.status.textContent = text;
  const label = view.label ?? "Computer screen";
  if (view.mode === "control") {
    parts.stage.setAttribute("role", "application");
    parts.stage.setAttribute("aria-label", `${label} (you control it)`);
  } else {
    parts.stage.setAttribute("role", "img");
    parts.stage.setAttribute("aria-label", view.mode === "view" ? `${label} (view only)` : label);
  }
}
