// The provider contract and the machine vocabulary: what the api, the supervisor and every backend
// share. Types, constants and the contract's error only, so any process may import it.
export * from "./egress.ts";
export * from "./errors.ts";
export * from "./kinds.ts";
export * from "./machine.ts";
export * from "./provider.ts";
export type { ScreenTarget } from "./screen-target.ts";
