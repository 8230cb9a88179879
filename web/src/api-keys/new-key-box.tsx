"use client";

import { useId, useState } from "react";
import styles from "./api-keys.module.css";
import type { CreatedApiKey } from "./queries.ts";

type CopyState = "idle" | "copied" | "failed";

/** The secret of a key just made: shown this once, selectable, with a Copy button. */
export function NewKeyBox({ created, onDone }: { created: CreatedApiKey; onDone: () => void }) {
  const id = useId();
  const [copy, setCopy] = useState<CopyState>("idle");
  const onCopy = async () => {
    try {
      // Missing outside a secure context (plain http on another host): then the text is there to select.
      if (!navigator.clipboard) throw new Error("no clipboard");
      await navigator.clipboard.writeText(created.key);
      setCopy("copied");
    } catch {
      setCopy("failed");
    }
  };
  return (
    <section className={`card stack ${styles.newKey}`} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>API key “{created.name}” created</h2>
      <div className="notice warning" role="note">
        <strong>Copy it now: it will not be shown again.</strong> Store it where your automation reads it and
        send it in the <code>X-Api-Key</code> header. If it is lost, revoke it and create another.
      </div>
      <div className="field">
        <label htmlFor={`${id}-key`}>Your new API key</label>
        <div className="row">
          <input
            id={`${id}-key`}
            className={styles.secret}
            readOnly
            value={created.key}
            onFocus={(e) => e.target.select()}
          />
          <button type="button" className="primary" onClick={onCopy}>
            Copy
          </button>
        </div>
        <span role="status" className="hint">
          {copy === "copied"
            ? "Copied to the clipboard."
            : copy === "failed"
              ? "The browser did not allow copying: select the key and copy it yourself."
              : null}
        </span>
      </div>
      <div className="row">
        <button type="button" onClick={onDone}>
          I have stored it
        </button>
      </div>
    </section>
  );
}
