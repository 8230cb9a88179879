"use client";

import { ErrorNote, Loading } from "@/ui/feedback.tsx";
import { atLeast, type Role } from "@/workspaces/queries.ts";
import { EgressForm } from "./egress-form.tsx";
import {
  type ComputerEgress,
  LEVEL_EXPLANATIONS,
  LEVEL_LABELS,
  useComputerEgress,
  useSetComputerEgress,
} from "./queries.ts";

/** Where the computer's programs may connect: its effective policy, whether it holds, what it refused. */
export function ComputerEgressPanel({
  workspaceId,
  computerId,
  role,
}: {
  workspaceId: string;
  computerId: string;
  role: Role;
}) {
  const egress = useComputerEgress(workspaceId, computerId);
  const change = useSetComputerEgress(workspaceId, computerId);
  if (egress.isPending) return <Loading what="the egress policy" />;
  if (!egress.data) return <ErrorNote error={egress.error} prefix="Could not load the egress policy" />;
  const policy = egress.data;
  return (
    <div className="stack">
      <EgressFacts policy={policy} />
      {atLeast(role, "admin") ? (
        <>
          <EgressForm
            // a new form once the policy changed, so it starts from what now holds
            key={JSON.stringify([policy.level, policy.allow, policy.inherited])}
            title="This computer's own policy"
            current={policy}
            enforceable={policy.enforceableLevels}
            allowlistLimits={policy.allowlistLimits}
            pending={change.isPending}
            error={change.error}
            saveLabel="Apply to this computer"
            onSave={(body) => change.mutate(body)}
          />
          {policy.inherited ? null : (
            <div className="row">
              <button type="button" disabled={change.isPending} onClick={() => change.mutate(null)}>
                Use the workspace's policy
              </button>
            </div>
          )}
        </>
      ) : (
        <p className="muted small">Admins and owners can change it.</p>
      )}
    </div>
  );
}

function EgressFacts({ policy }: { policy: ComputerEgress }) {
  return (
    <>
      <p>
        <strong>{LEVEL_LABELS[policy.level]}</strong>{" "}
        <span className="muted">
          ({policy.inherited ? "the workspace's policy" : "its own policy, overriding the workspace's"})
        </span>
        <br />
        <span className="small muted">{LEVEL_EXPLANATIONS[policy.level]}</span>
      </p>
      {policy.allow.length > 0 ? (
        <ul className="small">
          {policy.allow.map((destination) => (
            <li key={destination.host}>
              <code>{destination.host}</code>{" "}
              {destination.ports.length > 0 ? `ports ${destination.ports.join(", ")}` : "every port"}
            </li>
          ))}
        </ul>
      ) : null}
      {policy.unenforcedReason === null ? null : (
        <p className="notice warning" role="note">
          Not enforced: {policy.unenforcedReason} Its programs reach whatever its host lets them.
        </p>
      )}
      <p className="small">
        Connections refused: <strong>{policy.refusedTotal}</strong>{" "}
        <span className="muted">(each refused destination is in the audit trail below)</span>
      </p>
    </>
  );
}
