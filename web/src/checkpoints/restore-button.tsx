"use client";

import { useId, useState } from "react";
import { ConfirmButton } from "@/ui/confirm.tsx";
import type { RestoreInto } from "./queries.ts";

/**
 * "Restore" for one checkpoint, asking first where to restore it: into the current machine, or onto a
 * fresh one. The dialog says what happens to the home as it is now.
 */
export function RestoreButton({
  when,
  disabled,
  onRestore,
}: {
  /** The checkpoint's time, as the person sees it. */
  when: string;
  disabled: boolean;
  onRestore: (into: RestoreInto) => void;
}) {
  const [into, setInto] = useState<RestoreInto>("current");
  const name = useId();
  return (
    <ConfirmButton
      label="Restore"
      name={`Restore the checkpoint of ${when}`}
      title={`Restore the checkpoint of ${when}?`}
      confirmLabel="Restore"
      disabled={disabled}
      onConfirm={() => onRestore(into)}
    >
      <p>
        The computer's home becomes what it was at this checkpoint. Its browsers are closed first. The home as
        it is now is <strong>kept</strong> as a <code>before-restore</code> checkpoint, so this can be undone;
        other checkpoints stay. Open sessions on the computer must end first.
      </p>
      <fieldset>
        <legend>Restore into</legend>
        <label className="choice">
          <input
            type="radio"
            name={name}
            value="current"
            checked={into === "current"}
            onChange={() => setInto("current")}
          />
          <span>
            The current machine
            <br />
            <span className="muted small">
              Replaces the running machine's home; programs installed outside it stay.
            </span>
          </span>
        </label>
        <label className="choice">
          <input
            type="radio"
            name={name}
            value="fresh"
            checked={into === "fresh"}
            onChange={() => setInto("fresh")}
          />
          <span>
            A fresh machine
            <br />
            <span className="muted small">
              The old machine is removed and a new one starts with this home: anything outside the home is
              reset.
            </span>
          </span>
        </label>
      </fieldset>
    </ConfirmButton>
  );
}
