export type { DesktopAction, Modifier, MouseButton, Point } from "./actions.ts";
export { must } from "./calls.ts";
export {
  type AuditPage,
  type AuditQuery,
  type Bot,
  type Checkpoint,
  type Computer,
  Cubicle,
  type CubicleEnv,
  type CubicleOptions,
  type Schemas,
} from "./cubicle.ts";
export type { WorkspaceEvent, WorkspaceEventsOptions } from "./events.ts";
export { ComputerBusyError, CubicleError, type Problem, type SessionHolder } from "./problem.ts";
export type { components, operations, paths } from "./schema";
export {
  type CapabilityOptions,
  ControlLease,
  type ControlLeaseRecord,
  mintScreenCapability,
  type ScreenCapability,
  type ScreenRef,
} from "./screens.ts";
export {
  type ActResult,
  type FileBody,
  type FileList,
  type Observation,
  Session,
  type SessionOptions,
  type SessionRecord,
  type Upload,
} from "./session.ts";
export { ABORTED_EXIT, type ShellEvent, type ShellRequest, type ShellResult } from "./shell.ts";
export type { TransportOptions } from "./transport.ts";
