export {
  bridgeRfb,
  DEFAULT_HANDSHAKE_TIMEOUT_MS,
  type RfbBridgeEnd,
  type RfbBridgeEndReason,
  type RfbBridgeOptions,
} from "./bridge.ts";
export { ClientMessageType } from "./protocol.ts";
