/**
 * The screen proxy's own entry point with one addition for tests that weigh it: started with
 * `node --expose-gc`, SIGUSR2 runs a full garbage collection and then prints the process's memory
 * as one JSON line, so that what is measured afterwards is what the proxy still holds, not garbage
 * V8 had not got round to. Never for production: nothing but a test starts this file.
 */
import { runService } from "@cubicle/config";
import { parseProxyConfig, startProxy } from "@cubicle/proxy";

// What proxy/src/main.ts runs, started here so that the hooks below join it.
await runService("proxy", () => startProxy(parseProxyConfig(process.env)));

const collect = (globalThis as { gc?: () => void }).gc;
if (!collect) throw new Error("start the proxy with node --expose-gc to weigh it");
const gc = collect;
process.on("SIGUSR2", () => {
  // twice: the first pass may only finalise what the second then frees (weak refs, ws buffers)
  gc();
  gc();
  process.stdout.write(`${JSON.stringify({ collected: process.memoryUsage() })}\n`);
});
