"use client";

import { type FormEvent, useId } from "react";
import styles from "./audit.module.css";
import type { FilterDraft } from "./filters.ts";

type FieldName = keyof FilterDraft;

const FIELDS: { name: FieldName; label: string; hint?: string; type: "text" | "datetime-local" }[] = [
  { name: "actorId", label: "Actor ID", hint: "A person's user id or an API key's id.", type: "text" },
  { name: "action", label: "Action", hint: "Exact, or a prefix such as member.*", type: "text" },
  { name: "targetType", label: "Object type", hint: "For example bot, computer, member.", type: "text" },
  { name: "targetId", label: "Object ID", type: "text" },
  { name: "since", label: "Since", hint: "Your local time.", type: "datetime-local" },
  { name: "until", label: "Until", hint: "Your local time.", type: "datetime-local" },
];

/** The trail's filters; fields a page pinned (`hidden`) are left out. Applied on submit, not per keystroke. */
export function AuditFilters({
  draft,
  hidden,
  onChange,
  onApply,
  onClear,
}: {
  draft: FilterDraft;
  hidden: ReadonlySet<string>;
  onChange: (draft: FilterDraft) => void;
  onApply: () => void;
  onClear: () => void;
}) {
  const id = useId();
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    onApply();
  };
  return (
    <form className="card stack" onSubmit={onSubmit} aria-label="Audit log filters">
      <div className={styles.filters}>
        {FIELDS.filter((field) => !hidden.has(field.name)).map((field) => (
          <div className="field" key={field.name}>
            <label htmlFor={`${id}-${field.name}`}>{field.label}</label>
            <input
              id={`${id}-${field.name}`}
              type={field.type}
              value={draft[field.name]}
              aria-describedby={field.hint ? `${id}-${field.name}-hint` : undefined}
              onChange={(e) => onChange({ ...draft, [field.name]: e.target.value })}
            />
            {field.hint ? (
              <span id={`${id}-${field.name}-hint`} className="hint">
                {field.hint}
              </span>
            ) : null}
          </div>
        ))}
      </div>
      <div className="row">
        <button type="submit" className="primary">
          Apply filters
        </button>
        <button type="button" onClick={onClear}>
          Clear filters
        </button>
      </div>
    </form>
  );
}
