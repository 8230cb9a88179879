"use client";

import Link from "next/link";
import { useEffect, useRef, useState } from "react";
import type { Person } from "@/auth/session.ts";
import { useComputerHeartbeat } from "@/computers/heartbeat.ts";
import type { Computer } from "@/computers/queries.ts";
import { recordingsHref } from "@/recordings/queries.ts";
import { atLeast, type Role } from "@/workspaces/queries.ts";
import { activeScreens, screenLabel } from "./active-screens.ts";
import { leaseOf } from "./control.ts";
import { useNotExpired } from "./lease-clock.ts";
import { ScreenControl } from "./screen-control.tsx";
import { ScreenGrid } from "./screen-grid.tsx";
import { ScreenViewer } from "./screen-viewer.tsx";
import styles from "./screens.module.css";

/**
 * Every active screen of a running computer as a live thumbnail, and the selected one large, with
 * its control. The large viewer is in control mode exactly while the caller holds a live lease on it.
 */
export function LiveScreens({
  computer,
  me,
  role,
}: {
  computer: Computer;
  me: Person;
  role: Role | undefined;
}) {
  const running = computer.state === "running";
  useComputerHeartbeat(computer.workspaceId, computer.id, running);
  return (
    <>
      {running ? (
        <RunningScreens computer={computer} me={me} role={role} />
      ) : (
        <NotRunning computer={computer} role={role} />
      )}
      {atLeast(role, "admin") ? (
        <p className="small">
          <Link href={recordingsHref(computer.workspaceId, { computerId: computer.id })}>
            Recordings of this computer's screens
          </Link>
        </p>
      ) : null}
    </>
  );
}

function RunningScreens({ computer, me, role }: { computer: Computer; me: Person; role: Role | undefined }) {
  const [chosen, setChosen] = useState(0);
  const screens = activeScreens(computer);
  // A screen whose bot let go disappears from the grid; the large viewer falls back to screen 0.
  const selected = screens.find((screen) => screen.index === chosen) ??
    screens[0] ?? { index: 0, botName: null };
  const recorded = leaseOf(computer, selected.index);
  // A lease past its expiry is over even before the next poll drops it from the record.
  const lease = useNotExpired(recorded?.expiresAt) ? recorded : undefined;
  const controlling = lease?.holder.type === "user" && lease.holder.id === me.userId;
  const label = screenLabel(selected);
  const ended = useControlEnded(controlling, label);

  return (
    <div className="stack">
      <ScreenGrid
        workspaceId={computer.workspaceId}
        computerId={computer.id}
        epoch={computer.updatedAt}
        screens={screens}
        selected={selected.index}
        onSelect={setChosen}
      />
      <div className={styles.main}>
        <h3>{label}</h3>
        <ScreenControl
          // Another screen, another set of buttons: errors and progress of the last one do not carry over.
          key={selected.index}
          computer={computer}
          screen={selected.index}
          lease={lease}
          me={me}
          role={role}
        />
        <ScreenViewer
          workspaceId={computer.workspaceId}
          computerId={computer.id}
          screen={selected.index}
          mode={controlling ? "control" : "view"}
          label={label}
          testId="main-screen"
          epoch={computer.updatedAt}
        />
        <p className="muted small" role="status">
          {ended}
        </p>
      </div>
    </div>
  );
}

/**
 * Says so when the caller's control ends, however it ended (released, expired, revoked by an admin):
 * the picture alone does not tell a screen-reader user that their typing no longer arrives.
 */
function useControlEnded(controlling: boolean, label: string): string {
  const [ended, setEnded] = useState("");
  const was = useRef(false);
  useEffect(() => {
    if (was.current && !controlling) setEnded(`Your control of ${label} ended; it is view-only now.`);
    if (controlling) setEnded("");
    was.current = controlling;
  }, [controlling, label]);
  return ended;
}

function NotRunning({ computer, role }: { computer: Computer; role: Role | undefined }) {
  const what =
    computer.state === "booting"
      ? "The computer is starting; its screens appear here once it runs."
      : computer.state === "suspending"
        ? "The computer is stopping."
        : computer.state === "error"
          ? `The computer failed${computer.stateDetail ? " (the reason is at the top of the page)" : ""}, so it has no screens to show.`
          : `The computer is ${computer.state}, so it has no screens to show.`;
  return (
    <div className="notice" role="status">
      <p>{what}</p>
      {computer.state === "booting" || computer.state === "suspending" ? null : atLeast(role, "member") ? (
        <p>Start it with the Start button at the top of the page to watch its screens live.</p>
      ) : (
        <p>A member of the workspace can start it; then you can watch its screens here.</p>
      )}
    </div>
  );
}
