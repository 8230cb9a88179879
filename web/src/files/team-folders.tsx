"use client";

import { useBots } from "@/bots/queries.ts";
import styles from "./files.module.css";

/**
 * The Team Computer's shared folder and each Team bot's starting folder (`bots/<bot id>/`), named
 * after the bot, as shortcuts. Archived bots keep their folders, so they are listed too.
 */
export function TeamFolders({
  workspaceId,
  onOpen,
}: {
  workspaceId: string;
  onOpen: (path: string) => void;
}) {
  const bots = useBots(workspaceId, true);
  // Every Team bot works on the one Team Computer.
  const teamBots = (bots.data ?? []).filter((bot) => bot.computerMode === "team");
  return (
    <nav aria-label="Team shortcuts">
      <ul className={styles.quickLinks}>
        <li>
          <button type="button" className="link" onClick={() => onOpen("shared")}>
            <span className="mono">shared/</span>
          </button>{" "}
          <span className="muted small">for deliberate sharing</span>
        </li>
        {teamBots.map((bot) => (
          <li key={bot.id}>
            <button type="button" className="link" onClick={() => onOpen(`bots/${bot.id}`)}>
              <span className="mono">bots/{bot.id}/</span>
            </button>{" "}
            <span className="muted small">
              {bot.name}
              {bot.status === "archived" ? " (archived)" : ""}
            </span>
          </li>
        ))}
      </ul>
      {bots.error ? <p className="muted small">The bots' folders could not be listed.</p> : null}
    </nav>
  );
}
