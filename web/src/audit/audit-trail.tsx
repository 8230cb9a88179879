"use client";

import { useState } from "react";
import { RoleRequired, WithRole } from "@/members/roles.tsx";
import { Busy, EmptyState, ErrorNote, Loading } from "@/ui/feedback.tsx";
import { atLeast, useWorkspace } from "@/workspaces/queries.ts";
import { AuditFilters } from "./audit-filters.tsx";
import { AuditTable } from "./audit-table.tsx";
import { EMPTY_FILTERS, type FixedAuditFilters, toAuditQuery } from "./filters.ts";
import { type AuditScope, useAuditEvents } from "./queries.ts";

/**
 * The workspace's audit trail, newest first, with filters and paging. A page can pin filters for its
 * own trail (`fixed={{ targetType: "computer", targetId }}`); those fields then leave the form.
 * Only admins and owners may read it (the api's rule); anyone else sees why it is missing.
 */
export function AuditTrail({
  fixed = {},
  label = "Audit events, newest first",
  scope = "workspace",
  poll = false,
}: {
  fixed?: FixedAuditFilters;
  label?: string;
  scope?: AuditScope;
  /** Keep it current (beside live work, as on the computer page). */
  poll?: boolean;
}) {
  // The whole deployment's trail is the deployment owner's (the page offers it only to them),
  // whatever their role in this workspace.
  if (scope === "deployment") return <Trail fixed={fixed} label={label} scope={scope} poll={poll} />;
  return (
    <WithRole>
      {(role) =>
        atLeast(role, "admin") ? (
          <Trail fixed={fixed} label={label} scope={scope} poll={poll} />
        ) : (
          <RoleRequired role={role} minimum="admin" action="read the audit log" />
        )
      }
    </WithRole>
  );
}

function Trail({
  fixed,
  label,
  scope,
  poll,
}: {
  fixed: FixedAuditFilters;
  label: string;
  scope: AuditScope;
  poll: boolean;
}) {
  const { workspaceId } = useWorkspace();
  const [draft, setDraft] = useState(EMPTY_FILTERS);
  const [applied, setApplied] = useState(EMPTY_FILTERS);
  const events = useAuditEvents(workspaceId, toAuditQuery(applied, fixed), scope, poll);
  const items = events.data?.pages.flatMap((page) => page.items) ?? [];
  const filtered = Object.values(applied).some(Boolean);
  return (
    <div className="stack">
      <AuditFilters
        draft={draft}
        hidden={new Set(Object.keys(fixed))}
        onChange={setDraft}
        // The same filters again mean "show me what is new since".
        onApply={() => (draft === applied ? events.refetch() : setApplied(draft))}
        onClear={() => {
          setDraft(EMPTY_FILTERS);
          setApplied(EMPTY_FILTERS);
        }}
      />
      <ErrorNote error={events.error} prefix="The audit log could not be loaded" />
      {events.isPending ? <Loading what="audit events" /> : null}
      {events.isSuccess && items.length === 0 ? (
        <EmptyState title={filtered ? "No events match these filters" : "No audit events yet"} />
      ) : null}
      {items.length > 0 ? <AuditTable events={items} label={label} /> : null}
      {events.hasNextPage ? (
        <div className="row">
          <button type="button" disabled={events.isFetchingNextPage} onClick={() => events.fetchNextPage()}>
            Load more
          </button>
          {events.isFetchingNextPage ? <Busy label="Loading older events…" /> : null}
        </div>
      ) : null}
    </div>
  );
}
