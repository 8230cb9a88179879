"use client";

import { useId } from "react";
import styles from "./bots.module.css";
import { PrivateExplanation, TeamExplanation } from "./mode-explanations.tsx";
import type { ComputerMode } from "./queries.ts";

/** Team or Private, as radio buttons, each with what it means for sharing. */
export function ModeChoice({
  value,
  onChange,
}: {
  value: ComputerMode;
  onChange: (mode: ComputerMode) => void;
}) {
  const id = useId();
  return (
    <fieldset>
      <legend>Computer</legend>
      <label className="choice">
        <input
          type="radio"
          name={`${id}-mode`}
          value="team"
          checked={value === "team"}
          onChange={() => onChange("team")}
          aria-describedby={`${id}-team`}
        />
        <span>Team</span>
      </label>
      <div className={styles.indented}>
        <TeamExplanation id={`${id}-team`} />
      </div>
      <label className="choice">
        <input
          type="radio"
          name={`${id}-mode`}
          value="private"
          checked={value === "private"}
          onChange={() => onChange("private")}
          aria-describedby={`${id}-private`}
        />
        <span>Private</span>
      </label>
      <div className={styles.indented}>
        <PrivateExplanation id={`${id}-private`} />
      </div>
    </fieldset>
  );
}
