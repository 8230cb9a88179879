import type { Computer } from "@cubicle/db";
import {
  type CapabilityKeyring,
  type MintedCapability,
  mintCapability,
  type ScreenMode,
  type ScreenTarget,
} from "@cubicle/proxy/capability";
import { personRequired } from "../access/guards.ts";
import type { AuditLog } from "../audit/audit-log.ts";
import { actorOf, type Principal } from "../auth/principal.ts";
import { machineOf } from "../computers/repository.ts";
import type { WorkspaceAccess } from "../context.ts";
import { HttpProblem } from "../http/problem.ts";
import { controlRefusal, subjectOf } from "./access.ts";
import { liveLease } from "./control-leases.ts";
import { type ControlServerDeps, openControlFor } from "./control-server.ts";

export interface CapabilityRequest {
  principal: Principal;
  access: WorkspaceAccess;
  computer: Computer;
  screen: number;
  mode: ScreenMode;
}

/**
 * A short-lived token that lets its bearer open one socket to one screen through the proxy. Any
 * member may watch; controlling needs the screen's live control lease. The target (and its VNC
 * password) is sealed inside the token, so the caller never sees it.
 */
export async function mintScreenCapability(
  deps: ControlServerDeps & { capabilities: CapabilityKeyring; audit: AuditLog },
  request: CapabilityRequest,
): Promise<MintedCapability> {
  const { principal, access, computer, screen, mode } = request;
  if (principal.kind === "anonymous") throw new Error("capabilities are minted for a caller");
  let target: ScreenTarget;
  let controlLeaseId: string | undefined;
  if (mode === "view") {
    const { provider, ref } = await machineOf(deps, computer);
    target = await provider.openScreen(ref, screen);
  } else {
    const refusal = controlRefusal(principal.kind, access.role);
    if (refusal || principal.kind !== "user") throw refusal ?? personRequired();
    const lease = await liveLease(deps.database.db, computer.id, screen);
    if (lease?.holder_user_id !== principal.userId) {
      throw new HttpProblem(
        409,
        "CONTROL_NOT_HELD",
        `Take control of screen ${screen} before asking to control it.`,
      );
    }
    controlLeaseId = lease.id;
    target = await openControlFor(deps, computer, screen, lease.id);
  }

  const minted = await mintCapability(deps.capabilities, {
    subject: subjectOf(principal),
    workspaceId: computer.workspace_id,
    computerId: computer.id,
    screen,
    mode,
    ...(controlLeaseId === undefined ? {} : { controlLeaseId }),
    target,
  });
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
    },
  });
  return minted;
}
