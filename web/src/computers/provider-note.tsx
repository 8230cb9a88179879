import type { Computer } from "./queries.ts";

/**
 * The effective provider (what a start uses now, as /health says), and where the computer's machine
 * runs when that differs: its next start moves it to the effective one, restored from a checkpoint.
 */
export function ProviderNote({ computer }: { computer: Computer }) {
  const { effectiveProvider, providerKind, computersDisabled, movesOnNextStart } = computer;
  return (
    <span>
      <span className="mono">{effectiveProvider}</span>
      {computersDisabled ? <span className="muted small"> (computers are disabled)</span> : null}
      {movesOnNextStart ? (
        <span className="muted small">
          {" "}
          (ran on <span className="mono">{providerKind}</span>; the next start moves it)
        </span>
      ) : null}
    </span>
  );
}
