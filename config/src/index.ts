export { BearerToken } from "./bearer-token.ts";
export { ConfigError } from "./config-error.ts";
export { type Env, type EnvReader, envReader } from "./env-reader.ts";
export { type RunningService, runService, type ServiceProcess } from "./run-service.ts";
export { withSecretFiles } from "./secret-files.ts";
export { invalidTrustedProxies, TRUSTED_PROXY_RULE } from "./trusted-proxies.ts";
