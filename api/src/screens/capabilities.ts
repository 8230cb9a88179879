import type { Computer } from "@cubicle/db";
import {
  type CapabilityKeyring,
  type MintedCapability,
  mintCapability,
  type SCREEN_MODES,
  type ScreenTarget,
} from "@cubicle/proxy/capability";
import type { AuditLog } from "../audit/audit-log.ts";
import { actorOf, type Principal } from "../auth/principal.ts";
import { machineOf } from "../computers/repository.ts";
import type { WorkspaceAccess } from "../context.ts";
import { embedOriginsOf } from "../embedding/origins.ts";
import { HttpProblem } from "../http/problem.ts";
import {
  createPendingRecording,
  discardPendingRecording,
  recordingPolicyOf,
  screenRecorded,
} from "../recordings/index.ts";
import { controlRefusal, holderOfCaller, subjectOf } from "./access.ts";
import { isHeldBy, liveLease } from "./control-leases.ts";
import { type ControlServerDeps, openControlFor } from "./control-server.ts";

export interface CapabilityRequest {
  principal: Principal;
  access: WorkspaceAccess;
  computer: Computer;
  screen: number;
  /** `record` sockets are the api's own (recordings/recorders.ts), never minted here. */
  mode: (typeof SCREEN_MODES)[number];
  /** The one web origin whose page may open the socket (an embedding app's); one of the workspace's embed origins. */
  origin?: string | undefined;
}

export interface ScreenCapability extends MintedCapability {
  /** Whether the screen is recorded: this socket (a recorded control), or a recording of it live. */
  recorded: boolean;
}

/**
 * A short-lived token that lets its bearer open one socket to one screen through the proxy. Any
 * member may watch; controlling needs the screen's live control lease, held by the caller (a
 * person, or the API key of an app that embeds the screen). The target (and its VNC password) is
 * sealed inside the token, so the caller never sees it. A token bound to an origin opens only from
 * a page of that origin, which must be one of the workspace's embed origins. A control socket of a
 * workspace that records is recorded: its recording's row is made now, and its id travels in the
 * token (the proxy records under it) and in the grant's audit row.
 */
export async function mintScreenCapability(
  deps: ControlServerDeps & { capabilities: CapabilityKeyring; audit: AuditLog },
  request: CapabilityRequest,
): Promise<ScreenCapability> {
  const { principal, access, computer, screen, mode, origin } = request;
  if (principal.kind === "anonymous") throw new Error("capabilities are minted for a caller");
  const { db } = deps.database;
  if (origin !== undefined && !(await embedOriginsOf(db, computer.workspace_id)).includes(origin))
    throw new HttpProblem(
      422,
      "ORIGIN_NOT_LISTED",
      `${origin} is not one of the workspace's embed origins; an admin adds it in Settings (PUT /v1/workspaces/{workspaceId}/embed-origins).`,
    );
  let target: ScreenTarget;
  let controlLeaseId: string | undefined;
  if (mode === "view") {
    const { provider, ref } = await machineOf(deps, computer);
    target = await provider.openScreen(ref, screen);
  } else {
    const refusal = controlRefusal(access.role);
    if (refusal) throw refusal;
    const lease = await liveLease(db, computer.id, screen);
    if (!lease || !isHeldBy(lease, holderOfCaller(principal))) {
      throw new HttpProblem(
        409,
        "CONTROL_NOT_HELD",
        `Take control of screen ${screen} before asking to control it.`,
      );
    }
    controlLeaseId = lease.id;
    target = await openControlFor(deps, computer, screen, lease.id);
  }
  const recordingId =
    controlLeaseId !== undefined && (await recordingPolicyOf(db, computer.workspace_id)).mode !== "off"
      ? await createPendingRecording(db, {
          workspaceId: computer.workspace_id,
          computerId: computer.id,
          screen,
          kind: "control",
          controlLeaseId,
          botId: computer.bot_id,
          actor:
            principal.kind === "user"
              ? { type: "user", id: principal.userId, name: principal.name || principal.email }
              : { type: "api_key", id: principal.keyId, name: principal.name },
        })
      : undefined;

  let minted: MintedCapability;
  try {
    minted = await mintCapability(deps.capabilities, {
      subject: subjectOf(principal),
      workspaceId: computer.workspace_id,
      computerId: computer.id,
      screen,
      mode,
      ...(controlLeaseId === undefined ? {} : { controlLeaseId }),
      ...(recordingId === undefined ? {} : { recordingId }),
      ...(origin === undefined ? {} : { origin }),
      target,
    });
  } catch (error) {
    if (recordingId !== undefined) await discardPendingRecording(db, recordingId);
    throw error;
  }
  // The token id identifies the socket in the proxy's logs; the token and target stay secret.
  await deps.audit.record({
    actor: actorOf(principal),
    workspaceId: computer.workspace_id,
    action: "screen.capability_minted",
    target: { type: "computer", id: computer.id },
    data: {
      mode,
      screen,
      jti: minted.jti,
      ...(controlLeaseId === undefined ? {} : { leaseId: controlLeaseId }),
      ...(recordingId === undefined ? {} : { recordingId }),
      ...(origin === undefined ? {} : { origin }),
    },
  });
  return { ...minted, recorded: await screenRecorded(db, computer.id, screen) };
}
