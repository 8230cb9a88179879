import { ROLES, type Role } from "@/workspaces/queries.ts";
import { ROLE_LABELS } from "./roles.tsx";

/** What each role may do, as the api enforces it (each role may also do everything of the ones before). */
const ABILITIES = {
  viewer: "watches computers and screens, and sees bots and members.",
  member: "also starts computers, takes control of screens, runs bot sessions and makes API keys.",
  admin: "also manages bots, members and invitations, stops computers and reads the audit log.",
  owner: "also makes, changes and removes owners.",
} satisfies Record<Role, string>;

export function RoleGuide() {
  return (
    <details>
      <summary>What each role may do</summary>
      <ul>
        {ROLES.map((role) => (
          <li key={role}>
            <strong>{ROLE_LABELS[role]}</strong> {ABILITIES[role]}
          </li>
        ))}
      </ul>
    </details>
  );
}
