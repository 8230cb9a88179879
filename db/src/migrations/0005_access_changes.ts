import { type Kysely, sql } from "kysely";

/**
 * Access changes are announced by the database itself (docs/architecture.md, "Capabilities and
 * live screens"): whichever path removes a member, changes a role, revokes or deletes an API key,
 * deletes an account or a workspace (their cascades reach `member`), Cubicle's routes or Better
 * Auth's own endpoints, the change sends `pg_notify('cubicle_access_changes', {workspaceId})` in
 * its transaction. api streams it to every proxy replica, which checks again, at api, the sockets
 * it holds in that workspace. The notice names only the workspace: whether a socket may stay is
 * decided at api, in one place (a key's access, for one, also ends when its creator's does).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // The workspace column is named by the trigger: access ends where the row was, before the change.
  await sql`
    create function announce_access_change() returns trigger language plpgsql as $$
    begin
      perform pg_notify(
        'cubicle_access_changes',
        json_build_object('workspaceId', to_jsonb(old) ->> tg_argv[0])::text
      );
      return null;
    end $$`.execute(db);

  await sql`
    create trigger member_removed after delete on member
    for each row execute function announce_access_change('organizationId')`.execute(db);
  await sql`
    create trigger member_changed after update on member
    for each row when (
      old.role is distinct from new.role
      or old."organizationId" is distinct from new."organizationId"
      or old."userId" is distinct from new."userId"
    ) execute function announce_access_change('organizationId')`.execute(db);

  // Every use of a key updates its row (last request, counters): only what decides access counts.
  await sql`
    create trigger apikey_removed after delete on apikey
    for each row execute function announce_access_change('referenceId')`.execute(db);
  await sql`
    create trigger apikey_changed after update on apikey
    for each row when (
      old.enabled is distinct from new.enabled
      or old."expiresAt" is distinct from new."expiresAt"
      or old.metadata is distinct from new.metadata
      or old."referenceId" is distinct from new."referenceId"
    ) execute function announce_access_change('referenceId')`.execute(db);
}
