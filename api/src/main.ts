import { runService } from "@cubicle/config";
import { parseEnv } from "./config/env.ts";
import { startApi } from "./server.ts";

await runService("API", () => startApi(parseEnv(process.env)));
