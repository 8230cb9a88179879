/**
 * Every value SANDBOX_PROVIDER takes. Only the providers package compares them (a test holds the
 * rest of the repository to that): what differs between backends is asked of the backend.
 */
export const PROVIDER_KINDS = [
  "docker",
  "e2b",
  "daytona",
  "box",
  "desktop",
  "none",
  "fake",
  "e2b-emulator",
  "daytona-emulator",
  "box-emulator",
] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

/** Kinds that exist only for tests and development; refused in production. */
export const TEST_PROVIDER_KINDS = [
  "fake",
  "e2b-emulator",
  "daytona-emulator",
  "box-emulator",
] as const satisfies readonly ProviderKind[];
