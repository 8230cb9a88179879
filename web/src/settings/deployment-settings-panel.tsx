"use client";

import { ErrorNote, Loading } from "@/ui/feedback.tsx";
import { ComputerHostChoice } from "./computer-host-choice.tsx";
import { useDeploymentSettings } from "./queries.ts";
import { SignupsToggle } from "./signups-toggle.tsx";

/** The deployment owner's settings: who may sign up, and where Docker computers run. */
export function DeploymentSettingsPanel() {
  const settings = useDeploymentSettings();
  return (
    <section className="card stack" aria-labelledby="deployment-title">
      <h2 id="deployment-title">Deployment</h2>
      <p className="small muted">You own this deployment, so these settings are yours to change.</p>
      {settings.error ? <ErrorNote error={settings.error} prefix="The settings could not be loaded" /> : null}
      {settings.data ? (
        <>
          <SignupsToggle settings={settings.data} />
          <ComputerHostChoice settings={settings.data} />
        </>
      ) : settings.isPending ? (
        <Loading what="deployment settings" />
      ) : null}
    </section>
  );
}
