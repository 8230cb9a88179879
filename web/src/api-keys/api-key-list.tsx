"use client";

import { useMembers } from "@/members/queries.ts";
import { ROLE_LABELS } from "@/members/roles.tsx";
import { ConfirmButton } from "@/ui/confirm.tsx";
import { EmptyState, ErrorNote, Loading } from "@/ui/feedback.tsx";
import { Time } from "@/ui/time.tsx";
import { type ApiKey, useApiKeys, useRevokeApiKey } from "./queries.ts";

function keyState(key: ApiKey): { label: string; tone: string } {
  if (!key.enabled) return { label: "Revoked", tone: "danger" };
  if (key.expiresAt && new Date(key.expiresAt).getTime() <= Date.now())
    return { label: "Expired", tone: "warn" };
  return { label: "Active", tone: "ok" };
}

/** The workspace's keys: an admin sees everyone's (with who made each), a member their own. */
export function ApiKeyList({ workspaceId, seesAll }: { workspaceId: string; seesAll: boolean }) {
  const keys = useApiKeys(workspaceId);
  const members = useMembers(workspaceId);
  // until the members are known (or when they could not be read), nobody is called a former member
  const nameOf = (userId: string) =>
    members.data ? (members.data.find((member) => member.userId === userId)?.name ?? "A former member") : "…";
  if (keys.error) return <ErrorNote error={keys.error} prefix="The API keys could not be loaded" />;
  if (!keys.data) return <Loading what="API keys" />;
  if (keys.data.length === 0)
    return (
      <EmptyState title="No API keys yet">
        <p>Create one for each automation, so that each can be revoked on its own.</p>
      </EmptyState>
    );
  return (
    <div className="table-wrap">
      <table aria-label="API keys">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Role</th>
            <th scope="col">Starts with</th>
            {seesAll ? <th scope="col">Created by</th> : null}
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">Expires</th>
            <th scope="col">Status</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {keys.data.map((key) => (
            <ApiKeyRow
              key={key.id}
              workspaceId={workspaceId}
              apiKey={key}
              createdBy={seesAll ? nameOf(key.createdBy) : null}
            />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function ApiKeyRow({
  workspaceId,
  apiKey,
  createdBy,
}: {
  workspaceId: string;
  apiKey: ApiKey;
  createdBy: string | null;
}) {
  const revoke = useRevokeApiKey(workspaceId, apiKey.id);
  const state = keyState(apiKey);
  return (
    <tr>
      <td>{apiKey.name}</td>
      <td>{ROLE_LABELS[apiKey.role]}</td>
      <td>{apiKey.start ? <code>{apiKey.start}…</code> : <span className="muted">unknown</span>}</td>
      {createdBy === null ? null : <td>{createdBy}</td>}
      <td>
        <Time iso={apiKey.createdAt} />
      </td>
      <td>
        <Time iso={apiKey.lastUsedAt} />
      </td>
      <td>{apiKey.expiresAt ? <Time iso={apiKey.expiresAt} /> : <span className="muted">never</span>}</td>
      <td>
        <span className={`badge ${state.tone}`}>{state.label}</span>
      </td>
      <td>
        {apiKey.enabled ? (
          <ConfirmButton
            label="Revoke"
            name={`Revoke ${apiKey.name}`}
            title={`Revoke “${apiKey.name}”?`}
            confirmLabel="Revoke key"
            danger
            disabled={revoke.isPending}
            onConfirm={() => revoke.mutate()}
          >
            <p>Automations using this key are refused from now on. This cannot be undone.</p>
          </ConfirmButton>
        ) : null}
        <ErrorNote error={revoke.error} prefix="Not revoked" />
      </td>
    </tr>
  );
}
