/**
 * `@cubicle/providers/supervisor-wire`: the supervisor's HTTP API as both sides see it. The wire's
 * shapes and shared operations (`wire.ts`), its problems (`problems.ts`), its streams of events
 * (`ndjson.ts`) and the typed client (`client.ts`). The Docker backend and the api's doctor call
 * the supervisor through the client; the supervisor (`supervisor/`) serves the same wire.
 */
export {
  createSupervisorClient,
  type FileBody,
  type SupervisorClient,
  type SupervisorClientOptions,
  SupervisorError,
} from "./client.ts";
export { HEARTBEAT_MS, ndjsonLine, ndjsonStream, parseNdjson } from "./ndjson.ts";
export { PROBLEM_STATUS, type Problem, type ProblemCode } from "./problems.ts";
export * from "./wire.ts";
