// The api's configuration as other tools read it (`@cubicle/api/config`): the environment it
// parses and the secrets it resolves from it, without the api itself.
export { type ApiEnv, ConfigError, parseEnv } from "./env.ts";
export { resolveSecrets, type Secrets } from "./secrets.ts";
