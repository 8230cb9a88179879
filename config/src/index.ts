export { BearerToken } from "./bearer-token.ts";
export { ConfigError } from "./config-error.ts";
export { type Env, type EnvReader, envReader } from "./env-reader.ts";
export { bareOrigin, MAX_EMBED_ORIGINS, type OriginReading, readOrigin } from "./origin.ts";
export { type RunningService, runService, type ServiceProcess } from "./run-service.ts";
export { withSecretFiles } from "./secret-files.ts";
export { invalidTrustedProxies, TRUSTED_PROXY_RULE } from "./trusted-proxies.ts";
