"use client";

import { type FormEvent, useId, useRef, useState } from "react";
import { ErrorNote } from "@/ui/feedback.tsx";
import { MODE_LABELS } from "./bot-status.tsx";
import { PrivateExplanation, TeamExplanation } from "./mode-explanations.tsx";
import { BOT_LIMITS, type Bot, useSwitchBotMode } from "./queries.ts";

/**
 * Moves a bot to the other computer mode, in a native modal dialog. Not a ConfirmButton: moving to
 * Private asks for the reason (prefilled from the charter), and the dialog stays open with the text on
 * a refusal.
 */
export function SwitchModeButton({
  workspaceId,
  bot,
  disabled,
}: {
  workspaceId: string;
  bot: Bot;
  disabled?: boolean;
}) {
  const id = useId();
  const dialog = useRef<HTMLDialogElement>(null);
  // Rendered only while open, so a closed dialog adds no second "Why it is private" field to the page.
  const [open, setOpen] = useState(false);
  const [reason, setReason] = useState(bot.charter.privacyReason);
  const switchMode = useSwitchBotMode(workspaceId, bot.id);
  const target = bot.computerMode === "team" ? "private" : "team";
  const targetLabel = MODE_LABELS[target];

  const show = () => {
    switchMode.reset();
    setOpen(true);
    dialog.current?.showModal();
  };
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    switchMode.mutate(
      target === "private" ? { computerMode: "private", privacyReason: reason } : { computerMode: "team" },
      { onSuccess: () => dialog.current?.close() },
    );
  };

  return (
    <>
      <button type="button" disabled={disabled} onClick={show}>
        Switch to {targetLabel}
      </button>
      <dialog ref={dialog} aria-labelledby={`${id}-title`} onClose={() => setOpen(false)}>
        {open ? (
          <form className="stack" onSubmit={onSubmit}>
            <h2 id={`${id}-title`}>
              Move {bot.name} to {target === "private" ? "its own Private Computer" : "the Team Computer"}?
            </h2>
            {target === "private" ? <PrivateExplanation /> : <TeamExplanation />}
            <p className="small">
              Nothing is deleted: its files on the computer it leaves stay there, and a Private Computer is
              kept for when it comes back.
            </p>
            {target === "private" ? (
              <div className="field">
                <label htmlFor={`${id}-reason`}>Why it is private</label>
                <textarea
                  id={`${id}-reason`}
                  required
                  maxLength={BOT_LIMITS.charter}
                  value={reason}
                  onChange={(e) => setReason(e.target.value)}
                />
              </div>
            ) : null}
            <ErrorNote error={switchMode.error} prefix="Not switched" />
            <div className="row">
              <button type="button" onClick={() => dialog.current?.close()}>
                Cancel
              </button>
              <button type="submit" className="primary" disabled={switchMode.isPending}>
                {switchMode.isPending ? "Moving…" : `Move to ${targetLabel} Computer`}
              </button>
            </div>
          </form>
        ) : null}
      </dialog>
    </>
  );
}
