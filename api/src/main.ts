import { ConfigError, parseEnv } from "./config/env.ts";
import { startApi } from "./server.ts";

try {
  const api = await startApi(parseEnv(process.env));
  const shutdown = async () => {
    await api.close();
    process.exit(0);
  };
  process.once("SIGINT", shutdown);
  process.once("SIGTERM", shutdown);
} catch (error) {
  // A setup failure gets one readable paragraph and a non-zero exit, not a stack trace.
  if (error instanceof ConfigError) {
    console.error(`Cubicle API cannot start; fix its configuration:\n${error.message}`);
    process.exit(78);
  }
  console.error(`Cubicle API cannot start: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
