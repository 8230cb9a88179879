"use client";

import Link from "next/link";
import { AuditTrail } from "@/audit/audit-trail.tsx";
import { useMe } from "@/auth/session.ts";
import { CheckpointTimeline } from "@/checkpoints/checkpoint-timeline.tsx";
import { CommandRunner } from "@/commands/command-runner.tsx";
import { ComputerEgressPanel } from "@/egress/computer-egress.tsx";
import { FileBrowser } from "@/files/file-browser.tsx";
import { WithRole } from "@/members/roles.tsx";
import { LiveScreens } from "@/screens/live-screens.tsx";
import { SessionsTable } from "@/sessions/sessions-table.tsx";
import { PageHeader } from "@/ui/app-shell.tsx";
import { ErrorNote, Loading } from "@/ui/feedback.tsx";
import { Time } from "@/ui/time.tsx";
import { atLeast, type Role, useWorkspace } from "@/workspaces/queries.ts";
import { ComputerActions } from "./computer-actions.tsx";
import { ComputerStateBadge } from "./computer-state.tsx";
import styles from "./computers.module.css";
import { ProviderNote } from "./provider-note.tsx";
import { computerName, useComputer } from "./queries.ts";
import { Section } from "./section.tsx";

/** One computer: its state and lifecycle, live screens, shell, files, sessions, checkpoints, audit. */
export function ComputerPage({ computerId }: { computerId: string }) {
  // What the page offers depends on the role; guessing before it is known would flash wrong buttons.
  return <WithRole>{(role) => <ComputerDetails computerId={computerId} role={role} />}</WithRole>;
}

function ComputerDetails({ computerId, role }: { computerId: string; role: Role }) {
  const { workspaceId } = useWorkspace();
  const computer = useComputer(workspaceId, computerId);
  const me = useMe();
  const back = (
    <p className="small">
      <Link href={`/w/${workspaceId}/computers`}>← All computers</Link>
    </p>
  );

  if (computer.isPending)
    return (
      <>
        {back}
        <Loading what="the computer" />
      </>
    );
  if (!computer.data)
    return (
      <>
        {back}
        <ErrorNote error={computer.error} prefix="Could not load the computer" />
      </>
    );
  const data = computer.data;
  const running = data.state === "running";

  return (
    <>
      {back}
      <PageHeader
        title={computerName(data)}
        description={
          <span className={styles.facts}>
            {/* announced: booting → running is what the person is waiting for */}
            <span role="status">
              <ComputerStateBadge state={data.state} detail={data.stateDetail} />
            </span>
            <span>
              Provider <ProviderNote computer={data} />
            </span>
            <span>
              Last activity <Time iso={data.lastActivityAt} />
            </span>
          </span>
        }
        actions={<ComputerActions computer={data} role={role} />}
      />
      {data.state === "error" && data.stateDetail ? (
        <p className="notice error" role="alert">
          {data.stateDetail}
        </p>
      ) : null}
      {computer.isRefetchError ? (
        <ErrorNote error={computer.error} prefix="The computer's state could not be refreshed" />
      ) : null}

      <div className={styles.sections}>
        <Section title="Live screens">
          {me.data ? (
            <LiveScreens computer={data} me={me.data} role={role} />
          ) : (
            <Loading what="your account" />
          )}
        </Section>

        <Section
          title="Commands"
          description={
            <>
              Runs in the computer's home with <code>sh -c</code>; the output streams in as it is written.
            </>
          }
        >
          {!atLeast(role, "admin") ? (
            <p className="muted">Only admins and owners can run commands on a computer.</p>
          ) : running ? (
            <CommandRunner workspaceId={workspaceId} computerId={computerId} />
          ) : (
            <p className="notice">The computer is {data.state}; commands run while it runs.</p>
          )}
        </Section>

        <Section
          title="Network access"
          description="Where its programs may open connections, enforced outside the computer."
        >
          <ComputerEgressPanel workspaceId={workspaceId} computerId={computerId} role={role} />
        </Section>

        <Section title="Files">
          <FileBrowser computer={data} role={role} />
        </Section>

        <Section title="Sessions">
          <SessionsTable computer={data} />
        </Section>

        <Section
          title="Checkpoints"
          description="Immutable revisions of the home, newest first. Any of them can be restored."
        >
          <CheckpointTimeline computer={data} role={role} />
        </Section>

        <Section title="Audit trail">
          <AuditTrail
            poll
            fixed={{ targetType: "computer", targetId: computerId }}
            label="Audit events of this computer, newest first"
          />
        </Section>
      </div>
    </>
  );
}
