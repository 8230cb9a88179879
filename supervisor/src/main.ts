import { runService } from "@cubicle/config";
import { parseConfig } from "./config.ts";
import { startSupervisor } from "./server.ts";

await runService("supervisor", () => startSupervisor(parseConfig(process.env)));
