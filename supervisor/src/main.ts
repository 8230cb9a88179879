import { ConfigError, parseConfig } from "./config.ts";
import { startSupervisor } from "./server.ts";

try {
  const supervisor = await startSupervisor(parseConfig(process.env));
  const shutdown = async () => {
    await supervisor.close();
    process.exit(0);
  };
  process.once("SIGINT", shutdown);
  process.once("SIGTERM", shutdown);
} catch (error) {
  // A setup failure gets one readable paragraph and a non-zero exit, not a stack trace.
  if (error instanceof ConfigError) {
    console.error(`Cubicle supervisor cannot start; fix its configuration:\n${error.message}`);
    process.exit(78);
  }
  console.error(`Cubicle supervisor cannot start: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
