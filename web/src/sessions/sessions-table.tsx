"use client";

import { useBots } from "@/bots/queries.ts";
import type { Computer } from "@/computers/queries.ts";
import { EmptyState, ErrorNote, Loading } from "@/ui/feedback.tsx";
import { Time } from "@/ui/time.tsx";
import { type Session, useOpenSessions } from "./queries.ts";

/** The open sessions on one computer: which bot, held by whom, on which screen, since and until when. */
export function SessionsTable({ computer }: { computer: Computer }) {
  const sessions = useOpenSessions(computer.workspaceId);
  const bots = useBots(computer.workspaceId, true);

  if (sessions.isPending) return <Loading what="sessions" />;
  if (sessions.error) return <ErrorNote error={sessions.error} prefix="Could not load the sessions" />;
  const here = sessions.data.filter((session) => session.computerId === computer.id);
  if (here.length === 0)
    return (
      <EmptyState title="No open sessions">
        <p>A bot's automation opens a session to work on this computer; it shows here while it is open.</p>
      </EmptyState>
    );

  // Sessions name their bot by id only.
  const botName = (session: Session) =>
    bots.data?.find((bot) => bot.id === session.botId)?.name ?? session.botId;

  return (
    <div className="table-wrap">
      <table>
        <caption className="visually-hidden">Open sessions on this computer</caption>
        <thead>
          <tr>
            <th scope="col">Bot</th>
            <th scope="col">Holder</th>
            <th scope="col">Screen</th>
            <th scope="col">Since</th>
            <th scope="col">Expires</th>
          </tr>
        </thead>
        <tbody>
          {here.map((session) => (
            <tr key={session.sessionId}>
              <td>{botName(session)}</td>
              <td>
                {session.holder.name ?? session.holder.id}{" "}
                <span className="muted small">({session.holder.type === "user" ? "person" : "API key"})</span>
              </td>
              <td>{session.screen ?? <span className="muted">none</span>}</td>
              <td>
                <Time iso={session.createdAt} />
              </td>
              <td>
                <Time iso={session.expiresAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
