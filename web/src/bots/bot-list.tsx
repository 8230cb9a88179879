"use client";

import { useId, useState } from "react";
import { EmptyState, ErrorNote, Loading } from "@/ui/feedback.tsx";
import { BotRow } from "./bot-row.tsx";
import { useBots } from "./queries.ts";

/** The workspace's bots with their computer mode, status and session; archived ones on request. */
export function BotList({ workspaceId, canManage }: { workspaceId: string; canManage: boolean }) {
  const id = useId();
  const [includeArchived, setIncludeArchived] = useState(false);
  const bots = useBots(workspaceId, includeArchived);
  return (
    <section className="stack" aria-labelledby={`${id}-title`}>
      <div className="row">
        <h2 id={`${id}-title`}>All bots</h2>
        <label className="choice">
          <input
            type="checkbox"
            checked={includeArchived}
            onChange={(e) => setIncludeArchived(e.target.checked)}
          />
          <span>Show archived bots</span>
        </label>
      </div>
      {bots.error ? <ErrorNote error={bots.error} prefix="The bots could not be loaded" /> : null}
      {bots.isPending ? <Loading what="bots" /> : null}
      {bots.data?.length === 0 ? (
        <EmptyState title={includeArchived ? "No bots at all" : "No bots yet"}>
          <p>
            {canManage
              ? "Create one above: give it a charter and choose its computer."
              : "An admin or owner can create one."}
          </p>
        </EmptyState>
      ) : null}
      {bots.data?.length ? (
        <div className="table-wrap">
          <table aria-labelledby={`${id}-title`}>
            <thead>
              <tr>
                <th scope="col">Bot</th>
                <th scope="col">Computer</th>
                <th scope="col">Status</th>
                <th scope="col">Session</th>
                {canManage ? <th scope="col">Actions</th> : null}
              </tr>
            </thead>
            <tbody>
              {bots.data.map((bot) => (
                <BotRow key={bot.id} workspaceId={workspaceId} bot={bot} canManage={canManage} />
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}
