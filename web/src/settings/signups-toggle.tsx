"use client";

import { useId, useState } from "react";
import { ErrorNote } from "@/ui/feedback.tsx";
import { type DeploymentSettings, useUpdateDeploymentSettings } from "./queries.ts";

/** Saved as soon as it is toggled; shows the new state at once and goes back if the api refuses. */
export function SignupsToggle({ settings }: { settings: DeploymentSettings }) {
  const id = useId();
  const update = useUpdateDeploymentSettings();
  const [pending, setPending] = useState<boolean | null>(null);
  return (
    <fieldset className="stack">
      <legend>Sign-ups</legend>
      <label className="choice">
        <input
          type="checkbox"
          checked={pending ?? settings.signupsOpen}
          disabled={update.isPending}
          aria-describedby={`${id}-hint`}
          onChange={(e) => {
            const signupsOpen = e.target.checked;
            setPending(signupsOpen);
            update.mutate({ signupsOpen }, { onSettled: () => setPending(null) });
          }}
        />
        <span>Allow new sign-ups</span>
      </label>
      <span id={`${id}-hint`} className="small muted">
        When off, nobody new can create an account on this deployment, people you invite included. Existing
        accounts keep signing in.
      </span>
      <ErrorNote error={update.error} prefix="Sign-ups not changed" />
    </fieldset>
  );
}
