import type { Computer } from "./queries.ts";

/**
 * The effective provider (what a start uses now, as /health says), and where the computer's machine
 * runs when that differs: its next start moves it to the effective one, restored from a checkpoint.
 */
export function ProviderNote({ computer }: { computer: Computer }) {
  const { effectiveProvider, providerKind } = computer;
  return (
    <span>
      <span className="mono">{effectiveProvider}</span>
      {effectiveProvider === "none" ? <span className="muted small"> (computers are disabled)</span> : null}
      {providerKind !== effectiveProvider ? (
        <span className="muted small">
          {" "}
          (ran on <span className="mono">{providerKind}</span>; the next start moves it)
        </span>
      ) : null}
    </span>
  );
}
