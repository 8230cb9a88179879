export {
  type CapabilityContext,
  type ConnectDetail,
  CubicleScreenElement,
  type DisconnectDetail,
  defineCubicleScreen,
  type GetCapability,
  type LeaseDetail,
  type ScreenState,
  type StateDetail,
} from "./element.ts";
export {
  connectScreenFrame,
  FORWARDED_EVENTS,
  type ScreenEventName,
  type ScreenFrameOptions,
  serveScreenFrame,
} from "./frame.ts";
export { type EndReason, type ScreenCapability, type ScreenMode, STATUS_PROTOCOL } from "./protocol.ts";
export { MAX_FAILED_ATTEMPTS, RETRY_WAITS_MS } from "./retry.ts";
