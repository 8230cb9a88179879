import styles from "./bots.module.css";

/**
 * What Team and Private mean, in plain words. Shown where a mode is chosen (creating a bot, switching
 * it), because sharing a computer shares more than people expect.
 */
export function TeamExplanation({ id }: { id?: string }) {
  return (
    <span id={id} className={styles.explanation}>
      Team bots share one Team Computer: they share browser sessions (cookies, logins) and files. Each bot
      starts in its own folder (<code>bots/&lt;id&gt;/</code>) and <code>shared/</code> is for deliberate
      sharing, but these folders only organise work: they are <strong>not</strong> security boundaries. Choose
      Private when a bot must not share.
    </span>
  );
}

export function PrivateExplanation({ id }: { id?: string }) {
  return (
    <span id={id} className={styles.explanation}>
      The bot gets its own Private Computer: browser sessions and files that no other bot sees. Say why it
      needs one, so the team knows.
    </span>
  );
}
