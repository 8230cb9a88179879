"use client";

import { type FormEvent, useId, useState } from "react";
import { ErrorNote } from "@/ui/feedback.tsx";
import { ModeChoice } from "./mode-choice.tsx";
import { BOT_LIMITS, type ComputerMode, useCreateBot } from "./queries.ts";

/** A new bot and its charter. What was typed stays in the form until the api accepts it. */
export function CreateBotForm({ workspaceId }: { workspaceId: string }) {
  const id = useId();
  const create = useCreateBot(workspaceId);
  const [name, setName] = useState("");
  const [purpose, setPurpose] = useState("");
  const [boundary, setBoundary] = useState("");
  const [mode, setMode] = useState<ComputerMode>("team");
  const [privacyReason, setPrivacyReason] = useState("");
  const [created, setCreated] = useState<string | null>(null);

  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    setCreated(null);
    create.mutate(
      {
        name,
        // A Team bot has no reason to be private; the text typed stays in the form if Private is picked again.
        charter: { purpose, boundary, privacyReason: mode === "private" ? privacyReason : "" },
        computerMode: mode,
      },
      {
        onSuccess: (bot) => {
          setCreated(bot.name);
          setName("");
          setPurpose("");
          setBoundary("");
          setPrivacyReason("");
          setMode("team");
        },
      },
    );
  };

  return (
    <form className="card stack" onSubmit={onSubmit} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Create a bot</h2>
      <div className="field">
        <label htmlFor={`${id}-name`}>Name</label>
        <input
          id={`${id}-name`}
          required
          maxLength={BOT_LIMITS.name}
          value={name}
          onChange={(e) => setName(e.target.value)}
        />
      </div>
      <div className="field">
        <label htmlFor={`${id}-purpose`}>What it does</label>
        <textarea
          id={`${id}-purpose`}
          required
          maxLength={BOT_LIMITS.charter}
          aria-describedby={`${id}-purpose-hint`}
          value={purpose}
          onChange={(e) => setPurpose(e.target.value)}
        />
        <span id={`${id}-purpose-hint`} className="hint">
          Its job, in a sentence or two.
        </span>
      </div>
      <div className="field">
        <label htmlFor={`${id}-boundary`}>Boundary it never crosses</label>
        <textarea
          id={`${id}-boundary`}
          required
          maxLength={BOT_LIMITS.charter}
          aria-describedby={`${id}-boundary-hint`}
          value={boundary}
          onChange={(e) => setBoundary(e.target.value)}
        />
        <span id={`${id}-boundary-hint`} className="hint">
          What it must never do, for example “never pays, never emails customers”.
        </span>
      </div>
      <ModeChoice value={mode} onChange={setMode} />
      {mode === "private" ? (
        <div className="field">
          <label htmlFor={`${id}-privacy`}>Why it is private</label>
          <textarea
            id={`${id}-privacy`}
            required
            maxLength={BOT_LIMITS.charter}
            value={privacyReason}
            onChange={(e) => setPrivacyReason(e.target.value)}
          />
        </div>
      ) : null}
      <ErrorNote error={create.error} prefix="The bot was not created" />
      <div className="row">
        <button type="submit" className="primary" disabled={create.isPending}>
          Create bot
        </button>
        <span role="status" className="muted">
          {create.isPending ? "Creating…" : created ? `Created ${created}.` : null}
        </span>
      </div>
    </form>
  );
}
