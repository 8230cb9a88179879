"use client";

import { type FormEvent, useId, useState } from "react";
import { grantableRoles, RoleSelect } from "@/members/roles.tsx";
import { ErrorNote } from "@/ui/feedback.tsx";
import type { Role } from "@/workspaces/queries.ts";
import { type CreatedApiKey, useCreateApiKey } from "./queries.ts";

/** Days a key lasts ("" = until revoked); the api accepts 1 to 365. */
const EXPIRY_CHOICES = [
  { value: "", label: "Never (until revoked)" },
  { value: "7", label: "In 7 days" },
  { value: "30", label: "In 30 days" },
  { value: "90", label: "In 90 days" },
  { value: "365", label: "In a year" },
] as const;

export function CreateApiKeyForm({
  workspaceId,
  callerRole,
  onCreated,
}: {
  workspaceId: string;
  callerRole: Role;
  onCreated: (created: CreatedApiKey) => void;
}) {
  const id = useId();
  const create = useCreateApiKey(workspaceId);
  const [name, setName] = useState("");
  const [role, setRole] = useState<Role>("member");
  const [expiresIn, setExpiresIn] = useState("");
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate(
      { name, role, ...(expiresIn ? { expiresInDays: Number(expiresIn) } : {}) },
      {
        onSuccess: (created) => {
          setName("");
          onCreated(created);
          // the secret lives in the box shown once, not in the mutation cache for minutes more
          create.reset();
        },
      },
    );
  };
  return (
    <form className="card stack" onSubmit={onSubmit} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Create an API key</h2>
      <p className="small muted">
        A key lets an automation act in this workspace only, with the role you give it (never above yours). It
        stops working if you leave the workspace.
      </p>
      <div className="grid-2">
        <div className="field">
          <label htmlFor={`${id}-name`}>Name</label>
          <input
            id={`${id}-name`}
            required
            maxLength={100}
            aria-describedby={`${id}-name-hint`}
            value={name}
            onChange={(e) => setName(e.target.value)}
          />
          <span id={`${id}-name-hint`} className="hint">
            Where it is used, e.g. “nightly report job”.
          </span>
        </div>
        <div className="field">
          <label htmlFor={`${id}-role`}>Role</label>
          <RoleSelect id={`${id}-role`} value={role} roles={grantableRoles(callerRole)} onChange={setRole} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-expiry`}>Expires</label>
          <select id={`${id}-expiry`} value={expiresIn} onChange={(e) => setExpiresIn(e.target.value)}>
            {EXPIRY_CHOICES.map((choice) => (
              <option key={choice.value} value={choice.value}>
                {choice.label}
              </option>
            ))}
          </select>
        </div>
      </div>
      <ErrorNote error={create.error} prefix="The key was not created" />
      <div className="row">
        <button type="submit" className="primary" disabled={create.isPending}>
          Create API key
        </button>
        {create.isPending ? (
          <span role="status" className="muted">
            Creating…
          </span>
        ) : null}
      </div>
    </form>
  );
}
