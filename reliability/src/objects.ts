import { createPendingRecording } from "@cubicle/api/recordings";
import { expectStatus, type TestApi, type TestClient } from "@cubicle/api/testing/harness";
import { recordingOf, upload } from "@cubicle/api/testing/recording-uploads";
import { createBot } from "@cubicle/api/testing/sessions";
import { until } from "@cubicle/api/testing/until";
import { join } from "@cubicle/api/testing/world";

/** One object of every kind a route names in its path, by the path parameter that names it. */
export type Objects = Record<string, string> & { apiKey: string; fence: string };

let seq = 0;

/**
 * Fills a workspace, through the API as its owner, with one object of each kind the routes take
 * an id of: a member, a pending invitation, an API key (owner role; `apiKey` is its secret), a
 * connector credential, a Private bot whose computer runs with a checkpoint and a held control
 * lease on screen 0, a Team bot with an open session (`fence` to use it), and a recording of that
 * control lease (uploaded as the proxy uploads one) with a video export.
 */
export async function furnish(t: TestApi, owner: TestClient, workspaceId: string): Promise<Objects> {
  const tag = `${++seq}-${Date.now().toString(36)}`;
  const base = `/v1/workspaces/${workspaceId}`;
  const member = await join(t, owner, workspaceId, `member-${tag}@example.com`, "member");
  const { id: memberId } = await t.database.db
    .selectFrom("member")
    .select("id")
    .where("organizationId", "=", workspaceId)
    .where("userId", "=", member.userId)
    .executeTakeFirstOrThrow();
  const invitation = expectStatus(
    await owner.post(`${base}/invitations`, { email: `invitee-${tag}@example.com`, role: "viewer" }),
    201,
  ).json;
  const key = expectStatus(
    await owner.post(`${base}/api-keys`, { name: `key-${tag}`, role: "owner" }),
    201,
  ).json;
  const credential = expectStatus(
    await owner.post(`${base}/connector-credentials`, {
      name: `cred-${tag}`,
      kind: "github",
      secret: "s3cret",
    }),
    201,
  ).json;
  const privateBot = await createBot(owner, workspaceId, "private");
  const computer = `${base}/computers/${privateBot.computerId}`;
  expectStatus(await owner.post(`${computer}/start`), 200);
  const checkpoint = expectStatus(await owner.post(`${computer}/checkpoints`), 201).json;
  const lease = expectStatus(await owner.post(`${computer}/screens/0/control`), 201).json;
  const teamBot = await createBot(owner, workspaceId, "team");
  const session = expectStatus(await owner.post(`${base}/bots/${teamBot.id}/sessions`), 201).json;
  // the recording a control socket under that lease would make
  const recordingId = await createPendingRecording(t.database.db, {
    workspaceId,
    computerId: privateBot.computerId,
    screen: 0,
    kind: "control",
    controlLeaseId: lease.leaseId,
    actor: { type: "user", id: owner.userId, name: owner.email },
  });
  const uploaded = await upload(t.api.url, t.api.deps.capabilities, recordingId, recordingOf([]).bytes);
  if (uploaded.status !== 204) throw new Error(`the recording upload was answered ${uploaded.status}`);
  const recordingExport = expectStatus(
    await owner.post(`${base}/recordings/${recordingId}/exports`, { format: "webm" }),
    202,
  ).json;
  // made by the time the suite looks: a sweep that sees rows change takes it for its own doing
  await until("the recording's export to be ready", async () => {
    const { status } = expectStatus(
      await owner.get(`${base}/recordings/${recordingId}/exports/${recordingExport.id}`),
      200,
    ).json;
    if (status === "failed") throw new Error("the recording's export failed");
    return status === "ready" ? true : undefined;
  });
  return {
    workspaceId,
    memberId,
    invitationId: invitation.id,
    keyId: key.id,
    apiKey: key.key,
    credentialId: credential.id,
    // Session routes name the session's bot; bot routes take any bot.
    botId: teamBot.id,
    privateBotId: privateBot.id,
    computerId: privateBot.computerId,
    checkpointId: checkpoint.id,
    index: "0",
    leaseId: lease.leaseId,
    sessionId: session.sessionId,
    fence: String(session.fence),
    recordingId,
    exportId: recordingExport.id,
  };
}

/** The route's path with each {param} filled from `ids` (percent-encoded); fails on one it lacks. */
export function fill(path: string, ids: Record<string, string>): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const id = ids[name];
    if (id === undefined) throw new Error(`${path} takes a {${name}} that the suite has no object for`);
    return encodeURIComponent(id);
  });
}
