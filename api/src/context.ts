import type { DatabaseHandle } from "@cubicle/db";
import type { CapabilityKeyring } from "@cubicle/proxy/capability";
import type { WorkspaceRole } from "./access/roles.ts";
import type { AuditLog } from "./audit/audit-log.ts";
import type { CubicleAuth } from "./auth/auth.ts";
import type { Principal } from "./auth/principal.ts";
import type { Checkpoints } from "./checkpoints/checkpoints.ts";
import type { ApiEnv } from "./config/env.ts";
import type { CredentialCipher } from "./credentials/cipher.ts";
import type { Logger } from "./observability/logger.ts";
import type { Metrics } from "./observability/metrics.ts";
import type { Recordings, SessionRecorders } from "./recordings/index.ts";
import type { Sandbox } from "./sandbox/sandbox.ts";

/** Everything a route may use; built once in main.ts (or by a test) and handed to createApp. */
export interface AppDeps {
  env: ApiEnv;
  database: DatabaseHandle;
  auth: CubicleAuth;
  audit: AuditLog;
  cipher: CredentialCipher;
  logger: Logger;
  metrics: Metrics;
  sandbox: Sandbox;
  /** Revisions of computers' homes; also the lifecycle's hooks at start, stop and destroy. */
  checkpoints: Checkpoints;
  /** Recorded screens: the sealed store of recordings and the videos being made from them. */
  recordings: Recordings;
  /** This replica's record sockets: the screens of sessions it records. */
  sessionRecorders: SessionRecorders;
  /** Mints screen capabilities (and checks proxies' service tokens). */
  capabilities: CapabilityKeyring;
  /** The VNC password of a control lease's server (see screens/control-password.ts). */
  controlPassword: (leaseId: string) => string;
  /** Aborted when the API shuts down, so long-lived responses (event streams) end. */
  stopping: AbortSignal;
  version: string;
}

/** The caller's standing in the workspace named by the route, set by the workspace guard. */
export interface WorkspaceAccess {
  workspaceId: string;
  role: WorkspaceRole;
}

export interface AppEnv {
  Variables: {
    requestId: string;
    deps: AppDeps;
    principal: Principal;
    workspace: WorkspaceAccess;
  };
}
