"use client";

import { type InvalidateQueryFilters, useQueryClient } from "@tanstack/react-query";
import { type ReactNode, useEffect, useState } from "react";
import type { Schema } from "@/api/client.ts";
import { botsKey } from "@/bots/queries.ts";
import { computerKey, computersKey } from "@/computers/queries.ts";
import { sessionsKey } from "@/sessions/queries.ts";
import { atLeast, useWorkspace } from "@/workspaces/queries.ts";
import { LiveContext } from "./live.ts";

type WorkspaceEvent = Schema<"WorkspaceEvent">;

/**
 * The queries one event makes stale. Every computer's queries live under the workspace's computers
 * key (the list; below it each computer's record, and below that its checkpoint timeline, its
 * files and its egress policy), so a bare prefix would read all of them again; each filter here
 * names exactly what the event changes.
 */
type Stale = InvalidateQueryFilters;

/** The computers page's list (only it: `exact`), which shows every computer's state, sessions and control. */
const list = (event: WorkspaceEvent): Stale => ({ queryKey: computersKey(event.workspaceId), exact: true });
/** One computer's record (its page's header, state, sessions and control), not what lies below its key. */
const record = (event: WorkspaceEvent, computerId: string): Stale => ({
  queryKey: computerKey(event.workspaceId, computerId),
  exact: true,
});
/** One computer's checkpoint timeline (the key of `useCheckpoints`, checkpoints/queries.ts). */
const timeline = (event: WorkspaceEvent, computerId: string): Stale => ({
  queryKey: [...computerKey(event.workspaceId, computerId), "checkpoints"],
  exact: true,
});
/** Every folder shown of one computer's files (`useFolder`'s keys, files/queries.ts: one per path). */
const files = (event: WorkspaceEvent, computerId: string): Stale => ({
  queryKey: [...computerKey(event.workspaceId, computerId), "files"],
});

/** The computer an event is about: its target, or for a session the computer in its data. */
const computerOf = (event: WorkspaceEvent): string | undefined => {
  if (event.target?.type === "computer") return event.target.id;
  const { computerId } = event.data;
  return typeof computerId === "string" ? computerId : undefined;
};

/** A computer's state changed, or who controls its screens: the list and its record. */
const computers = (event: WorkspaceEvent): Stale[] => {
  const computerId = computerOf(event);
  return computerId ? [list(event), record(event, computerId)] : [list(event)];
};
/**
 * A session opened or ended: the list and its computer's record (both show open sessions), the
 * sessions list (exact) and the bots (each query under the bots key: a session makes its bot busy
 * or idle).
 */
const sessions = (event: WorkspaceEvent): Stale[] => [
  ...computers(event),
  { queryKey: sessionsKey(event.workspaceId), exact: true },
  { queryKey: botsKey(event.workspaceId) },
];
/** A checkpoint taken, failed, given up or pruned: that computer's timeline alone. */
const checkpoint = (event: WorkspaceEvent): Stale[] => {
  const computerId = computerOf(event);
  return computerId ? [timeline(event, computerId)] : [];
};
/** A restore: the timeline (its `before-restore` revision), the home's files and the record. */
const restore = (event: WorkspaceEvent): Stale[] => {
  const computerId = computerOf(event);
  return computerId ? [timeline(event, computerId), files(event, computerId), record(event, computerId)] : [];
};

/**
 * What each event changes on the dashboard's pages: the queries read again when it comes. Keyed by
 * every event type the api's document names, so a new one fails the type check until it is here.
 */
const AFFECTS: Record<WorkspaceEvent["type"], (event: WorkspaceEvent) => Stale[]> = {
  "computer.created": computers,
  "computer.started": computers,
  "computer.start_failed": computers,
  "computer.stopped": computers,
  "computer.stop_failed": computers,
  "computer.destroyed": computers,
  "computer.destroy_failed": computers,
  "session.opened": sessions,
  "session.ended": sessions,
  "session.expired": sessions,
  "screen.control_granted": computers,
  "screen.control_released": computers,
  "screen.control_expired": computers,
  "screen.control_revoked": computers,
  "checkpoint.created": checkpoint,
  "checkpoint.failed": checkpoint,
  "checkpoint.abandoned": checkpoint,
  "checkpoint.restored": restore,
  "checkpoint.pruned": checkpoint,
};

/** After the api refused the stream or could not be reached, EventSource gives up; this tries again. */
const REOPEN_MS = 5_000;

/**
 * Follows the workspace's events (members and above; viewers keep polling) and reads again what
 * each one changes. EventSource reconnects by itself after a dropped connection, resuming with
 * Last-Event-ID; after a refusal (the api restarting behind the dashboard answers 502) it stops,
 * and a new one is opened here from the last id seen, as a query parameter since EventSource
 * sends no headers of ours. If that one is refused too before its `ready`, the next starts without
 * an id: `ready` reads every query again, so nothing is missed, and an id the api refuses for good
 * (400 `INVALID_EVENT_ID`: of an event epoch the database lost to a restore) is not sent forever.
 */
export function LiveEvents({ workspaceId, children }: { workspaceId: string; children: ReactNode }) {
  const client = useQueryClient();
  const { role } = useWorkspace();
  const follows = atLeast(role, "member");
  const [live, setLive] = useState(false);

  useEffect(() => {
    if (!follows) return;
    let source: EventSource | undefined;
    let reopen: ReturnType<typeof setTimeout> | undefined;
    let lastEventId = "";
    const open = () => {
      const query = lastEventId ? `?lastEventId=${encodeURIComponent(lastEventId)}` : "";
      const opened = new EventSource(`/v1/workspaces/${encodeURIComponent(workspaceId)}/events${query}`);
      source = opened;
      let ready = false;
      opened.addEventListener("ready", (message) => {
        ready = true;
        lastEventId = message.lastEventId;
        setLive(true);
        // whatever changed while this was not following (before the first ready, nothing is replayed)
        void client.invalidateQueries({ queryKey: ["workspaces", workspaceId] });
        void client.invalidateQueries({ queryKey: botsKey(workspaceId) });
      });
      for (const [type, affects] of Object.entries(AFFECTS))
        opened.addEventListener(type, (message) => {
          lastEventId = message.lastEventId;
          // every event is also a new record of the audit trail: each audit query (the workspace's
          // and the deployment's, every filter and page) is under this key
          for (const filters of [
            ...affects(JSON.parse(message.data) as WorkspaceEvent),
            { queryKey: ["audit"] },
          ])
            void client.invalidateQueries(filters);
        });
      opened.onerror = () => {
        setLive(false);
        if (opened.readyState !== EventSource.CLOSED) return;
        if (!ready) lastEventId = "";
        reopen = setTimeout(open, REOPEN_MS);
      };
    };
    open();
    return () => {
      clearTimeout(reopen);
      source?.close();
      setLive(false);
    };
  }, [client, follows, workspaceId]);

  return <LiveContext.Provider value={follows && live}>{children}</LiveContext.Provider>;
}
