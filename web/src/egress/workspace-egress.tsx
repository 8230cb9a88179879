"use client";

import { ErrorNote, Loading } from "@/ui/feedback.tsx";
import { atLeast, type Role } from "@/workspaces/queries.ts";
import { EgressForm } from "./egress-form.tsx";
import { LEVEL_LABELS, useSetWorkspaceEgress, useWorkspaceEgress } from "./queries.ts";

/** The workspace's egress policy, which every computer without its own follows. */
export function WorkspaceEgressPanel({ workspaceId, role }: { workspaceId: string; role: Role }) {
  const egress = useWorkspaceEgress(workspaceId);
  const change = useSetWorkspaceEgress(workspaceId);
  if (egress.isPending) return <Loading what="the egress policy" />;
  if (!egress.data) return <ErrorNote error={egress.error} prefix="Could not load the egress policy" />;
  const policy = egress.data;
  return (
    <section className="card stack" aria-labelledby="workspace-egress-title">
      <h2 id="workspace-egress-title">Network access of computers</h2>
      <p className="muted small">
        Where the programs on this workspace's computers may open connections. A computer can have its own
        policy instead (on its page). Changes apply to running computers at once, without a restart.
      </p>
      <p>
        Now: <strong>{LEVEL_LABELS[policy.level]}</strong>
      </p>
      {atLeast(role, "admin") ? (
        <EgressForm
          key={JSON.stringify([policy.level, policy.allow])}
          title="Workspace policy"
          current={policy}
          enforceable={policy.enforceableLevels}
          allowlistLimits={policy.allowlistLimits}
          pending={change.isPending}
          error={change.error}
          saveLabel="Apply to the workspace"
          onSave={(body) => change.mutate(body)}
        />
      ) : (
        <p className="muted small">Admins and owners can change it.</p>
      )}
    </section>
  );
}
