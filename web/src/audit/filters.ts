import type { paths } from "@cubicle/client/schema";

export type AuditQuery = NonNullable<
  paths["/v1/workspaces/{workspaceId}/audit-events"]["get"]["parameters"]["query"]
>;

/** Filters a page can pin for its own trail, e.g. `{ targetType: "computer", targetId }`. */
export type FixedAuditFilters = Pick<
  AuditQuery,
  "actorId" | "actorType" | "action" | "targetType" | "targetId"
>;

/** The free-text filters of the form, by their query parameter. */
const TEXT_FILTERS = ["actorId", "action", "targetType", "targetId"] as const;

/** The filter form as typed: text, and times as `datetime-local` values (the person's local time). */
export type FilterDraft = Record<(typeof TEXT_FILTERS)[number] | "since" | "until", string>;

export const EMPTY_FILTERS: FilterDraft = {
  actorId: "",
  action: "",
  targetType: "",
  targetId: "",
  since: "",
  until: "",
};

/** A `datetime-local` value (no zone: the browser's local time) as the instant the api expects. */
function localTimeToIso(value: string): string | undefined {
  if (!value) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** The api's query for the form: empty fields left out; pinned filters win over typed ones. */
export function toAuditQuery(draft: FilterDraft, fixed: FixedAuditFilters): Omit<AuditQuery, "cursor"> {
  const query: Omit<AuditQuery, "cursor"> = {};
  for (const name of TEXT_FILTERS) {
    const value = draft[name].trim();
    if (value) query[name] = value;
  }
  const since = localTimeToIso(draft.since);
  const until = localTimeToIso(draft.until);
  if (since) query.since = since;
  if (until) query.until = until;
  return { ...query, ...fixed };
}
