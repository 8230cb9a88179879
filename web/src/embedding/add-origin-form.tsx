"use client";

import { MAX_EMBED_ORIGINS } from "@cubicle/config/origin";
import { type FormEvent, useId, useState } from "react";
import { ErrorNote } from "@/ui/feedback.tsx";
import { readEmbedOrigin } from "./embed-origin.ts";
import type { useSetEmbedOrigins } from "./queries.ts";

/**
 * Adds one origin to the list. What was typed stays until the api accepts it, and a refusal (here
 * or the api's, a removal's included) is said under it.
 */
export function AddOriginForm({
  listed,
  change,
}: {
  listed: readonly string[];
  change: ReturnType<typeof useSetEmbedOrigins>;
}) {
  const id = useId();
  const [typed, setTyped] = useState("");
  const [invalid, setInvalid] = useState<Error | null>(null);

  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    setInvalid(null);
    let origin: string;
    try {
      origin = readEmbedOrigin(typed, listed);
    } catch (problem) {
      setInvalid(problem as Error);
      return;
    }
    change.mutate([...listed, origin], { onSuccess: () => setTyped("") });
  };

  return (
    <form className="stack" onSubmit={onSubmit} noValidate>
      <div className="field">
        <label htmlFor={`${id}-origin`}>Origin to add</label>
        <input
          id={`${id}-origin`}
          type="url"
          inputMode="url"
          autoComplete="off"
          spellCheck={false}
          placeholder="https://tools.example.com"
          aria-describedby={`${id}-hint`}
          aria-invalid={invalid ? true : undefined}
          value={typed}
          onChange={(event) => setTyped(event.target.value)}
        />
        <span id={`${id}-hint`} className="hint">
          The address of the embedding page up to its host and port, without a path, as in{" "}
          <code>https://tools.example.com</code> or <code>http://localhost:8080</code>; at most{" "}
          {MAX_EMBED_ORIGINS}.
        </span>
      </div>
      <ErrorNote error={invalid ?? change.error} prefix="The embed origins were not changed" />
      <div className="row">
        <button type="submit" className="primary" disabled={change.isPending}>
          Add origin
        </button>
        <span role="status" className="muted">
          {change.isPending ? "Saving…" : null}
        </span>
      </div>
    </form>
  );
}
