"use client";

import { type ReactNode, useRef } from "react";

/**
 * A button that asks before doing something that cannot be undone, in a native modal dialog
 * (focus is trapped and Escape cancels, as screen-reader and keyboard users expect).
 */
export function ConfirmButton({
  label,
  name,
  title,
  children,
  confirmLabel,
  onConfirm,
  disabled,
  danger,
}: {
  label: string;
  /** The button's accessible name where the label repeats on a page (one per row): "Archive Scout". */
  name?: string;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  onConfirm: () => void;
  disabled?: boolean;
  danger?: boolean;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  return (
    <>
      <button
        type="button"
        className={danger ? "danger" : undefined}
        disabled={disabled}
        aria-label={name}
        onClick={() => dialog.current?.showModal()}
      >
        {label}
      </button>
      <dialog ref={dialog} aria-label={title}>
        <form method="dialog" className="stack">
          <h2>{title}</h2>
          <div>{children}</div>
          <div className="row">
            <button type="submit" value="cancel">
              Cancel
            </button>
            <button
              type="submit"
              value="confirm"
              className={danger ? "danger" : "primary"}
              onClick={() => onConfirm()}
            >
              {confirmLabel}
            </button>
          </div>
        </form>
      </dialog>
    </>
  );
}
