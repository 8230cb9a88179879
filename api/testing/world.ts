import { expectStatus, type TestApi, type TestClient } from "./harness.ts";

export type Role = "owner" | "admin" | "member" | "viewer";

export interface World {
  workspaceId: string;
  /** One signed-in person per role, plus someone who belongs to another workspace only. */
  people: Record<Role | "outsider", TestClient>;
  /** The outsider's own workspace. */
  otherWorkspaceId: string;
}

/**
 * A workspace with an owner, an admin, a member and a viewer (all joined by invitation), and an
 * outsider with a workspace of their own. Built through the public API only (of an api in this
 * process or in its own).
 */
export async function buildWorld(t: Pick<TestApi, "client">, tag: string): Promise<World> {
  const owner = t.client();
  expectStatus(await owner.signUp(`owner-${tag}@example.com`), 200);
  const workspace = expectStatus(await owner.post("/v1/workspaces", { name: `Team ${tag}` }), 201).json;
  const people = { owner } as World["people"];
  for (const role of ["admin", "member", "viewer"] as const) {
    people[role] = await join(t, owner, workspace.id, `${role}-${tag}@example.com`, role);
  }
  const outsider = t.client();
  expectStatus(await outsider.signUp(`outsider-${tag}@example.com`), 200);
  const other = expectStatus(await outsider.post("/v1/workspaces", { name: `Elsewhere ${tag}` }), 201).json;
  people.outsider = outsider;
  return { workspaceId: workspace.id, people, otherWorkspaceId: other.id };
}

export async function join(
  t: Pick<TestApi, "client">,
  inviter: TestClient,
  workspaceId: string,
  email: string,
  role: Role,
) {
  const invitation = expectStatus(
    await inviter.post(`/v1/workspaces/${workspaceId}/invitations`, { email, role }),
    201,
  ).json;
  const person = t.client();
  expectStatus(await person.signUp(email), 200);
  expectStatus(await person.post(`/v1/invitations/${invitation.id}/accept`), 200);
  return person;
}
