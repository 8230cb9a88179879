"use client";

import { type QueryKey, useQueryClient } from "@tanstack/react-query";
import { type ReactNode, useEffect, useState } from "react";
import type { Schema } from "@/api/client.ts";
import { botsKey } from "@/bots/queries.ts";
import { computerKey, computersKey } from "@/computers/queries.ts";
import { sessionsKey } from "@/sessions/queries.ts";
import { atLeast, useWorkspace } from "@/workspaces/queries.ts";
import { LiveContext } from "./live.ts";

type WorkspaceEvent = Schema<"WorkspaceEvent">;

/** A computer's record shows its state, its sessions and who controls its screens. */
const computers = (event: WorkspaceEvent): QueryKey[] => [computersKey(event.workspaceId)];
/** A session also makes its bot busy or idle. */
const sessions = (event: WorkspaceEvent): QueryKey[] => [
  computersKey(event.workspaceId),
  sessionsKey(event.workspaceId),
  botsKey(event.workspaceId),
];
/** Under one computer's key: its record, its checkpoint timeline and its files (a restore). */
const oneComputer = (event: WorkspaceEvent): QueryKey[] =>
  event.target ? [computerKey(event.workspaceId, event.target.id)] : [computersKey(event.workspaceId)];

/**
 * What each event changes on the dashboard's pages: the queries read again when it comes. Keyed by
 * every event type the api's document names, so a new one fails the type check until it is here.
 */
const AFFECTS: Record<WorkspaceEvent["type"], (event: WorkspaceEvent) => QueryKey[]> = {
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
  "checkpoint.created": oneComputer,
  "checkpoint.failed": oneComputer,
  "checkpoint.abandoned": oneComputer,
  "checkpoint.restored": oneComputer,
  "checkpoint.pruned": oneComputer,
};

/** After the api refused the stream or could not be reached, EventSource gives up; this tries again. */
const REOPEN_MS = 5_000;

/**
 * Follows the workspace's events (members and above; viewers keep polling) and reads again what
 * each one changes. EventSource reconnects by itself after a dropped connection, resuming with
 * Last-Event-ID; after a refusal (the api restarting behind the dashboard answers 502) it stops,
 * and a new one is opened here from the last id seen, as a query parameter since EventSource
 * sends no headers of ours.
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
      opened.addEventListener("ready", (message) => {
        lastEventId = message.lastEventId;
        setLive(true);
        // whatever changed while this was not following (before the first ready, nothing is replayed)
        void client.invalidateQueries({ queryKey: ["workspaces", workspaceId] });
        void client.invalidateQueries({ queryKey: botsKey(workspaceId) });
      });
      for (const [type, affects] of Object.entries(AFFECTS))
        opened.addEventListener(type, (message) => {
          lastEventId = message.lastEventId;
          // every event is also a new record of the audit trail (the workspace's and the deployment's)
          for (const queryKey of [...affects(JSON.parse(message.data) as WorkspaceEvent), ["audit"]])
            void client.invalidateQueries({ queryKey });
        });
      opened.onerror = () => {
        setLive(false);
        if (opened.readyState !== EventSource.CLOSED) return;
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
