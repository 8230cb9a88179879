"use client";

import Link from "next/link";
import { ConfirmButton } from "@/ui/confirm.tsx";
import { ErrorNote } from "@/ui/feedback.tsx";
import { Time } from "@/ui/time.tsx";
import { MODE_LABELS, SessionSummary, StatusBadge } from "./bot-status.tsx";
import styles from "./bots.module.css";
import { type Bot, useArchiveBot } from "./queries.ts";
import { SwitchModeButton } from "./switch-mode-button.tsx";

export function BotRow({
  workspaceId,
  bot,
  canManage,
}: {
  workspaceId: string;
  bot: Bot;
  canManage: boolean;
}) {
  return (
    <tr>
      <td>
        <strong>{bot.name}</strong>
        <p className={`${styles.purpose} small muted`}>{bot.charter.purpose}</p>
        <details>
          <summary className="small">Charter</summary>
          <dl className={styles.charter}>
            <dt>What it does</dt>
            <dd>{bot.charter.purpose}</dd>
            <dt>Boundary it never crosses</dt>
            <dd>{bot.charter.boundary}</dd>
            {bot.charter.privacyReason ? (
              <>
                <dt>Why it is private</dt>
                <dd>{bot.charter.privacyReason}</dd>
              </>
            ) : null}
          </dl>
        </details>
      </td>
      <td>
        {bot.computerId ? (
          <Link href={`/w/${workspaceId}/computers/${bot.computerId}`}>
            {MODE_LABELS[bot.computerMode]} Computer
          </Link>
        ) : (
          `${MODE_LABELS[bot.computerMode]} Computer`
        )}
      </td>
      <td>
        <StatusBadge status={bot.status} />
        {bot.archivedAt ? (
          <div className="small muted">
            <Time iso={bot.archivedAt} />
          </div>
        ) : null}
      </td>
      <td>
        <SessionSummary session={bot.session} />
      </td>
      {canManage ? (
        <td className={styles.actions}>
          {bot.status === "archived" ? null : <BotActions workspaceId={workspaceId} bot={bot} />}
        </td>
      ) : null}
    </tr>
  );
}

function BotActions({ workspaceId, bot }: { workspaceId: string; bot: Bot }) {
  const archive = useArchiveBot(workspaceId, bot.id);
  // The api refuses both while the bot has a session or a screen; say so rather than fail.
  const busy = bot.status === "busy";
  return (
    <div className="stack">
      <div className="row">
        <SwitchModeButton workspaceId={workspaceId} bot={bot} disabled={busy} />
        <ConfirmButton
          label="Archive"
          name={`Archive ${bot.name}`}
          title={`Archive ${bot.name}?`}
          confirmLabel="Archive bot"
          danger
          disabled={busy || archive.isPending}
          onConfirm={() => archive.mutate()}
        >
          <p>
            It leaves the bot list and frees its name. Its record, its computer and its files are kept, and
            the audit log keeps its history.
          </p>
        </ConfirmButton>
      </div>
      {busy ? (
        <span className="small muted">Switching and archiving wait until its session ends.</span>
      ) : null}
      <ErrorNote error={archive.error} prefix="Not archived" />
    </div>
  );
}
