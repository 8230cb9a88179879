import type { ComputerState } from "./queries.ts";

const LOOK: Record<ComputerState, { text: string; tone: "ok" | "warn" | "danger" | "" }> = {
  running: { text: "Running", tone: "ok" },
  booting: { text: "Booting", tone: "warn" },
  suspending: { text: "Suspending", tone: "warn" },
  suspended: { text: "Suspended", tone: "" },
  stopped: { text: "Stopped", tone: "" },
  error: { text: "Error", tone: "danger" },
};

/** The state in words (never colour alone); `detail` says why it is in `error`. */
export function ComputerStateBadge({ state, detail }: { state: ComputerState; detail?: string | null }) {
  const look = LOOK[state];
  return (
    <span className={`badge ${look.tone}`} title={detail ?? undefined} data-state={state}>
      {look.text}
    </span>
  );
}
