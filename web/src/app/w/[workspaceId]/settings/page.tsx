"use client";

import { useMe } from "@/auth/session.ts";
import { DeploymentSettingsPanel } from "@/settings/deployment-settings-panel.tsx";
import { SandboxHealth } from "@/settings/sandbox-health.tsx";
import { PageHeader } from "@/ui/app-shell.tsx";

export default function SettingsPage() {
  const me = useMe();
  return (
    <>
      <PageHeader
        title="Settings"
        description="How this Cubicle deployment runs computers, and who may join it."
      />
      <div className="stack">
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
