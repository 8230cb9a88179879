"use client";

import { useId, useState } from "react";
import { ConfirmButton } from "@/ui/confirm.tsx";
import { ErrorNote } from "@/ui/feedback.tsx";
import { COMPUTER_HOST_LABELS, ComputerHostWarning } from "./computer-host.tsx";
import { type ComputerHost, type DeploymentSettings, useUpdateDeploymentSettings } from "./queries.ts";
import styles from "./settings.module.css";

const EXPLANATIONS: Record<ComputerHost, string> = {
  isolated: "Each computer runs in its own locked-down container. Recommended.",
  "this-host": "Computers run on this machine itself, as the service's user, with its files and network.",
};

/**
 * Where Docker computers run. Not a <form>: the confirmation's dialog holds a form of its own, and
 * forms do not nest.
 */
export function ComputerHostChoice({ settings }: { settings: DeploymentSettings }) {
  const id = useId();
  const update = useUpdateDeploymentSettings();
  const [choice, setChoice] = useState<ComputerHost>(settings.computerHost);
  const save = () => update.mutate({ computerHost: choice });
  const unchanged = choice === settings.computerHost;
  return (
    <fieldset className="stack">
      <legend>Where Docker computers run</legend>
      <ComputerHostWarning />
      <div>
        {(["isolated", "this-host"] as const).map((host) => (
          <div key={host}>
            <label className="choice">
              <input
                type="radio"
                name={`${id}-host`}
                value={host}
                checked={choice === host}
                aria-describedby={`${id}-${host}`}
                onChange={() => setChoice(host)}
              />
              <span>{COMPUTER_HOST_LABELS[host]}</span>
            </label>
            <span id={`${id}-${host}`} className={styles.explanation}>
              {EXPLANATIONS[host]}
            </span>
          </div>
        ))}
      </div>
      <p className="small muted">
        It applies to Docker computers (<code>SANDBOX_PROVIDER=docker</code>); a computer moves to the new
        place the next time it starts.
      </p>
      <ErrorNote error={update.error} prefix="Computer host not changed" />
      <div className="row">
        {choice === "this-host" ? (
          <ConfirmButton
            label="Save computer host"
            title="Run computers on this host?"
            confirmLabel="Run computers on this host"
            danger
            disabled={unchanged || update.isPending}
            onConfirm={save}
          >
            <ComputerHostWarning />
          </ConfirmButton>
        ) : (
          <button type="button" className="primary" disabled={unchanged || update.isPending} onClick={save}>
            Save computer host
          </button>
        )}
        <span role="status" className="muted">
          {update.isPending ? "Saving…" : update.isSuccess && unchanged ? "Saved." : null}
        </span>
      </div>
    </fieldset>
  );
}
