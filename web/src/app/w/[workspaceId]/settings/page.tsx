"use client";

import { useMe } from "@/auth/session.ts";
import { WorkspaceEgressPanel } from "@/egress/workspace-egress.tsx";
import { EmbeddingPanel } from "@/embedding/embedding-panel.tsx";
import { WithRole } from "@/members/roles.tsx";
import { DeploymentSettingsPanel } from "@/settings/deployment-settings-panel.tsx";
import { RecordingPolicyPanel } from "@/settings/recording-policy.tsx";
import { SandboxHealth } from "@/settings/sandbox-health.tsx";
import { PageHeader } from "@/ui/app-shell.tsx";
import { useWorkspace } from "@/workspaces/queries.ts";

export default function SettingsPage() {
  const me = useMe();
  const { workspaceId } = useWorkspace();
  return (
    <>
      <PageHeader
        title="Settings"
        description="How this workspace's computers reach the network, what of their screens is recorded, which other sites may show them, how this Cubicle deployment runs computers, and who may join it."
      />
      <div className="stack">
        <WithRole>
          {(role) => (
            <>
              <WorkspaceEgressPanel workspaceId={workspaceId} role={role} />
              <RecordingPolicyPanel workspaceId={workspaceId} role={role} />
              <EmbeddingPanel workspaceId={workspaceId} role={role} />
            </>
          )}
        </WithRole>
        <SandboxHealth />
        {me.data?.isDeploymentOwner ? (
          <DeploymentSettingsPanel />
        ) : (
          <p className="notice" role="note">
            Only the deployment owner (the first account) can open or close sign-ups and choose where
            computers run. The values in use are shown above.
          </p>
        )}
      </div>
    </>
  );
}
