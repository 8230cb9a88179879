import { parseProxyConfig } from "./config.ts";
import { ConfigError } from "./config-error.ts";
import { startProxy } from "./server.ts";

try {
  const proxy = await startProxy(parseProxyConfig(process.env));
  const shutdown = async () => {
    await proxy.close();
    process.exit(0);
  };
  process.once("SIGINT", shutdown);
  process.once("SIGTERM", shutdown);
} catch (error) {
  // A setup failure gets one readable paragraph and a non-zero exit, not a stack trace.
  if (error instanceof ConfigError) {
    console.error(`Cubicle proxy cannot start; fix its configuration:\n${error.message}`);
    process.exit(78);
  }
  console.error(`Cubicle proxy cannot start: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
