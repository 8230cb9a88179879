"use client";

import type { ReactNode } from "react";
import { Problem } from "@/api/client.ts";

/** What went wrong, in words a person can act on (the api's problem detail), announced to screen readers. */
export function ErrorNote({ error, prefix }: { error: unknown; prefix?: string }) {
  if (!error) return null;
  const message =
    error instanceof Problem
      ? error.detail
      : error instanceof Error
        ? error.message
        : "Something went wrong.";
  const fields = error instanceof Problem ? error.errors : [];
  return (
    <div className="notice error" role="alert">
      {prefix ? `${prefix}: ` : null}
      {message}
      {fields.length > 0 ? (
        <ul>
          {fields.map((field) => (
            <li key={`${field.path}: ${field.message}`}>
              {/* the api names body fields as json.<field> */}
              {field.path.replace(/^json\./, "")}: {field.message}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

export function EmptyState({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <p>
        <strong>{title}</strong>
      </p>
      {children}
    </div>
  );
}

/** A long piece of work in progress (boot, checkpoint, restore), announced politely. */
export function Busy({ label }: { label: string }) {
  return (
    <span className="row" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" />
      {label}
    </span>
  );
}

export function Loading({ what }: { what: string }) {
  return <Busy label={`Loading ${what}…`} />;
}
