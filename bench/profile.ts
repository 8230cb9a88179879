/**
 * Where a measured process's CPU went (the proxy with BENCH_PROXY_CPU_PROF=1, the api with
 * BENCH_API_CPU_PROF=1): a summary of the `.cpuprofile` that `node --cpu-prof` writes when it exits.
 * Samples are counted where they landed (self time), by function and by whose code it is, leaving
 * out the idle ones. The file itself opens as a flame graph in Chrome DevTools (Performance panel)
 * or speedscope.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { printTable } from "./report.ts";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

interface CpuProfile {
  nodes: ProfileNode[];
}

/** Whose code a sample was in: a workspace's own, a package's, Node's, or V8's bookkeeping. */
function owner(url: string, functionName: string): string {
  if (url === "") return functionName.startsWith("(") ? functionName : "(native)";
  if (url.startsWith("node:")) return "node internals";
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  if (pkg) return `package ${pkg}`;
  const workspace = /\/([^/]+)\/src\//.exec(url)?.[1];
  return workspace ? `${workspace}/src` : url;
}

const place = (url: string, line: number) =>
  url === ""
    ? ""
    : `${url.replace(/^file:\/\//, "").replace(/^.*\/(node_modules|src)\//, "$1/")}:${line + 1}`;

const percent = (part: number, whole: number) => `${((100 * part) / whole).toFixed(1)} %`;

/**
 * Prints the top `top` functions by self time, and the totals by owner, from the main thread's
 * profile in `dir` of the process called `subject` ("proxy", "api").
 */
export async function printProfileSummary(subject: string, dir: string, top = 15): Promise<void> {
  // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: thread 0 is the main one (tsx's loader has another).
  const file = (await readdir(dir)).find((name) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(name));
  if (!file) throw new Error(`no main-thread .cpuprofile in ${dir}: the ${subject} did not exit cleanly`);
  const profile = JSON.parse(await readFile(join(dir, file), "utf8")) as CpuProfile;
  const byFunction = new Map<string, { name: string; where: string; hits: number }>();
  const byOwner = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const { callFrame, hitCount = 0 } of profile.nodes) {
    if (callFrame.functionName === "(idle)") idle += hitCount;
    if (hitCount === 0 || callFrame.functionName === "(idle)") continue;
    total += hitCount;
    const name = callFrame.functionName || "(anonymous)";
    const where = place(callFrame.url, callFrame.lineNumber);
    const key = `${name} ${where}`;
    const entry = byFunction.get(key) ?? { name, where, hits: 0 };
    entry.hits += hitCount;
    byFunction.set(key, entry);
    const who = owner(callFrame.url, name);
    byOwner.set(who, (byOwner.get(who) ?? 0) + hitCount);
  }
  console.log(
    `\nCPU profile of the ${subject}, main thread (${join(dir, file)}): busy in ${percent(total, total + idle)} of ` +
      `${total + idle} samples; self time as a share of the busy samples:\n`,
  );
  printTable(
    [
      ["function", "where", "self"],
      ...[...byFunction.values()]
        .sort((a, b) => b.hits - a.hits)
        .slice(0, top)
        .map((entry) => [entry.name, entry.where, percent(entry.hits, total)]),
    ],
    2,
  );
  console.log("");
  printTable([
    ["whose code", "self"],
    ...[...byOwner.entries()].sort((a, b) => b[1] - a[1]).map(([who, hits]) => [who, percent(hits, total)]),
  ]);
}
