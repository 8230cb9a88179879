export { createApp } from "./app.ts";
export { ConfigError, parseEnv } from "./config/env.ts";
export { type RunningApi, startApi } from "./server.ts";
