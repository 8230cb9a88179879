import type { ReactNode } from "react";
import styles from "./computers.module.css";

/**
 * One titled part of the computer page. Its h2 is how people (and screen readers' heading lists) find
 * it; the section is deliberately not a named region, whose name ("Commands", "Files") would also
 * answer label queries meant for the inputs inside ("Command", "File to upload").
 */
export function Section({
  title,
  description,
  children,
}: {
  title: string;
  description?: ReactNode;
  children: ReactNode;
}) {
  return (
    <section className={`card ${styles.section}`}>
      <h2>{title}</h2>
      {description ? <p className="muted small">{description}</p> : null}
      {children}
    </section>
  );
}
