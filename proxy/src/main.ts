import { runService } from "@cubicle/config";
import { parseProxyConfig } from "./config.ts";
import { startProxy } from "./server.ts";

await runService("proxy", () => startProxy(parseProxyConfig(process.env)));
