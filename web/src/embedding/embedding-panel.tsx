"use client";

import { ErrorNote, Loading } from "@/ui/feedback.tsx";
import { atLeast, type Role } from "@/workspaces/queries.ts";
import { AddOriginForm } from "./add-origin-form.tsx";
import styles from "./embedding.module.css";
import { useEmbedOrigins, useSetEmbedOrigins } from "./queries.ts";

/**
 * The workspace's embed origins: everyone in it sees them; admins and owners add and remove them
 * (each change replaces the list, audited). A refused change leaves the list as it was.
 */
export function EmbeddingPanel({ workspaceId, role }: { workspaceId: string; role: Role }) {
  const origins = useEmbedOrigins(workspaceId);
  const change = useSetEmbedOrigins(workspaceId);
  const canChange = atLeast(role, "admin");
  return (
    <section className="card stack" aria-labelledby="embedding-title">
      <h2 id="embedding-title">Embedding</h2>
      <p className="muted small">
        Web apps at these origins may show this workspace's live screens in their own pages (the{" "}
        <code>&lt;cubicle-screen&gt;</code> element, or the embed page in an iframe) with capabilities their
        backend mints; every other site is refused. How: “Embedding a live screen” in Cubicle's README.
      </p>
      {origins.isPending ? (
        <Loading what="the embed origins" />
      ) : !origins.data ? (
        <ErrorNote error={origins.error} prefix="Could not load the embed origins" />
      ) : (
        <>
          <OriginList
            listed={origins.data.origins}
            onRemove={canChange ? (remaining) => change.mutate(remaining) : null}
            removing={change.isPending}
          />
          {canChange ? (
            <AddOriginForm listed={origins.data.origins} change={change} />
          ) : (
            <p className="muted small">Admins and owners can change them.</p>
          )}
        </>
      )}
    </section>
  );
}

function OriginList({
  listed,
  onRemove,
  removing,
}: {
  listed: string[];
  /** Given the list without the origin; null for those who may not change it. */
  onRemove: ((remaining: string[]) => void) | null;
  removing: boolean;
}) {
  if (listed.length === 0) return <p>No origins: live screens show only on this dashboard.</p>;
  return (
    <ul className={`plain-list ${styles.origins}`} aria-label="Embed origins">
      {listed.map((origin) => (
        <li key={origin} className="row">
          <code>{origin}</code>
          {onRemove ? (
            <button
              type="button"
              aria-label={`Remove ${origin}`}
              disabled={removing}
              onClick={() => onRemove(listed.filter((other) => other !== origin))}
            >
              Remove
            </button>
          ) : null}
        </li>
      ))}
    </ul>
  );
}
