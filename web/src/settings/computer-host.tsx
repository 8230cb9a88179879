import styles from "./settings.module.css";

export const COMPUTER_HOST_LABELS = {
  isolated: "Isolated",
  "this-host": "This host",
} as const;

/** Said wherever this-host can be chosen or is in effect. */
export function ComputerHostWarning() {
  return (
    <div className={`notice warning ${styles.hostWarning}`} role="note">
      <strong>Warning: running computers on this host gives bots the host's files and network.</strong> Never
      use it on a shared or public service.
    </div>
  );
}
