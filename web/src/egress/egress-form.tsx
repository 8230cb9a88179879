"use client";

import { type FormEvent, useId, useState } from "react";
import { ErrorNote } from "@/ui/feedback.tsx";
import styles from "./egress.module.css";
import {
  type AllowlistLimits,
  type EgressLevel,
  type EgressPolicyInput,
  formatDestinations,
  LEVEL_EXPLANATIONS,
  LEVEL_LABELS,
  parseDestinations,
} from "./queries.ts";

const LEVELS: readonly EgressLevel[] = ["default", "allowlist", "offline", "open"];

/**
 * Choosing an egress policy: a level, and for an allowlist its destinations. Levels the provider
 * cannot enforce are shown but cannot be picked. What was typed stays until the api accepts it.
 */
export function EgressForm({
  title,
  current,
  enforceable,
  allowlistLimits,
  pending,
  error,
  saveLabel,
  onSave,
}: {
  title: string;
  current: EgressPolicyInput;
  enforceable: readonly EgressLevel[];
  /** What an allowlist may hold on the provider; null where it enforces none. */
  allowlistLimits: AllowlistLimits;
  pending: boolean;
  error: unknown;
  saveLabel: string;
  onSave: (policy: EgressPolicyInput) => void;
}) {
  const id = useId();
  const [level, setLevel] = useState<EgressLevel>(current.level);
  const [destinations, setDestinations] = useState(formatDestinations(current.allow ?? []));
  const [parseError, setParseError] = useState<Error | null>(null);

  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    setParseError(null);
    try {
      onSave({ level, allow: level === "allowlist" ? parseDestinations(destinations) : [] });
    } catch (problem) {
      setParseError(problem as Error);
    }
  };

  return (
    <form className="stack" onSubmit={onSubmit}>
      <fieldset className="stack">
        <legend>{title}</legend>
        {LEVELS.map((choice) => {
          const can = enforceable.includes(choice);
          return (
            <div key={choice}>
              <label className="choice">
                <input
                  type="radio"
                  name={`${id}-level`}
                  value={choice}
                  checked={level === choice}
                  disabled={!can}
                  aria-describedby={`${id}-${choice}`}
                  onChange={() => setLevel(choice)}
                />
                <span>{LEVEL_LABELS[choice]}</span>
              </label>
              <span id={`${id}-${choice}`} className={styles.explanation}>
                {LEVEL_EXPLANATIONS[choice]}
                {can ? null : " This provider cannot enforce it."}
              </span>
            </div>
          );
        })}
      </fieldset>
      {level === "allowlist" ? (
        <div className="field">
          <label htmlFor={`${id}-allow`}>Allowed destinations</label>
          <textarea
            id={`${id}-allow`}
            required
            aria-describedby={`${id}-allow-hint`}
            value={destinations}
            onChange={(e) => setDestinations(e.target.value)}
          />
          {allowlistLimits?.ports === false ? (
            <span id={`${id}-allow-hint`} className="hint">
              One a line: a host name, an address or a CIDR block, e.g. <code>api.example.com</code> or{" "}
              <code>203.0.113.0/24</code>; at most {allowlistLimits.maxDestinations}. This provider's rules
              have no ports: each destination allows every port.
            </span>
          ) : (
            <span id={`${id}-allow-hint`} className="hint">
              One a line: a host name, an address or a CIDR block, then its ports if only some, e.g.{" "}
              <code>api.example.com 443</code> or <code>203.0.113.0/24</code>
              {allowlistLimits ? `; at most ${allowlistLimits.maxDestinations}` : ""}.
            </span>
          )}
        </div>
      ) : null}
      <ErrorNote error={parseError ?? error} prefix="The egress policy was not changed" />
      <div className="row">
        <button type="submit" className="primary" disabled={pending}>
          {saveLabel}
        </button>
        <span role="status" className="muted">
          {pending ? "Applying…" : null}
        </span>
      </div>
    </form>
  );
}
