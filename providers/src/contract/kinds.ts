/**
 * Every value SANDBOX_PROVIDER takes: the keys of the backends' table (`selection/backends.ts`,
 * where `PROVIDER_KINDS` lists them). Only the providers package compares them (a test holds the
 * rest of the repository to that): what differs between backends is asked of the backend. A type
 * here, so that importing the contract loads no backend.
 */
export type { ProviderKind } from "../selection/backends.ts";
