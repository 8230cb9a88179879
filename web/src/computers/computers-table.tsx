"use client";

import Link from "next/link";
import { controllerName } from "@/screens/control.ts";
import { EmptyState, ErrorNote, Loading } from "@/ui/feedback.tsx";
import { Time } from "@/ui/time.tsx";
import { useWorkspace } from "@/workspaces/queries.ts";
import { ComputerActions } from "./computer-actions.tsx";
import { ComputerStateBadge } from "./computer-state.tsx";
import styles from "./computers.module.css";
import { ProviderNote } from "./provider-note.tsx";
import { type Computer, computerName, useComputers } from "./queries.ts";

/** Every computer of the workspace: what it is doing, who uses it, and its lifecycle buttons. */
export function ComputersTable() {
  const { workspaceId, role } = useWorkspace();
  const computers = useComputers(workspaceId);

  if (computers.isPending) return <Loading what="computers" />;
  if (computers.error) return <ErrorNote error={computers.error} prefix="Could not load the computers" />;
  if (computers.data.length === 0)
    return (
      <EmptyState title="No computers yet">
        <p>
          A computer is made the first time it is needed: the Team Computer when a Team bot starts working, a
          Private Computer when a Private bot does.
        </p>
        <p>
          <Link href={`/w/${workspaceId}/bots`}>Go to Bots</Link>
        </p>
      </EmptyState>
    );

  return (
    <div className="table-wrap">
      <table>
        <caption className="visually-hidden">Computers of this workspace</caption>
        <thead>
          <tr>
            <th scope="col">Computer</th>
            <th scope="col">State</th>
            <th scope="col">Provider</th>
            <th scope="col">Screens in use</th>
            <th scope="col">Control</th>
            <th scope="col">Last activity</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {computers.data.map((computer) => (
            <tr key={computer.id}>
              <td>
                <Link href={`/w/${workspaceId}/computers/${computer.id}`}>{computerName(computer)}</Link>
              </td>
              <td>
                <ComputerStateBadge state={computer.state} detail={computer.stateDetail} />
              </td>
              <td>
                <ProviderNote computer={computer} />
              </td>
              <td>
                <ScreensInUse computer={computer} />
              </td>
              <td>
                <Controllers computer={computer} />
              </td>
              <td>
                <Time iso={computer.lastActivityAt} />
              </td>
              <td>
                <ComputerActions computer={computer} role={role} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function ScreensInUse({ computer }: { computer: Computer }) {
  if (computer.screens.length === 0) return <span className="muted">none</span>;
  return (
    <ul className={styles.plainList}>
      {computer.screens.map((screen) => (
        <li key={screen.index}>
          Screen {screen.index}: {screen.bot.name}
        </li>
      ))}
    </ul>
  );
}

function Controllers({ computer }: { computer: Computer }) {
  if (computer.control.length === 0) return <span className="muted">nobody</span>;
  return (
    <ul className={styles.plainList}>
      {computer.control.map((lease) => (
        <li key={lease.leaseId}>
          {controllerName(lease.holder)} (screen {lease.index})
        </li>
      ))}
    </ul>
  );
}
