export type { ScreenTarget } from "@cubicle/providers/contract";
export {
  type CapabilityGrant,
  MAX_CAPABILITY_TTL_SECONDS,
  type MintedCapability,
  mintCapability,
  type ReplayGuard,
  SCREEN_PATH,
  SCREEN_PROTOCOL,
  SCREEN_STATUS_PROTOCOL,
  type VerifiedCapability,
  verifyCapability,
} from "./capability.ts";
export { type CapabilityKey, CapabilityKeyring, type CapabilityKeySecrets } from "./keys.ts";
export { CAPABILITY_MODES, SCREEN_MODES, type ScreenMode } from "./modes.ts";
export { mintServiceToken, type ServiceName, verifyServiceToken } from "./service-token.ts";
export { CapabilityRefused, MAX_CLAIM_ID_LENGTH, type RefusalReason } from "./signed.ts";
