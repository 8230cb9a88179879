// `cubicle doctor` (`npm run doctor`; in the api image, `docker compose exec api cubicle doctor`):
// every check as a line, what to do under each problem, exit status 1 when there is one.
// `--json` prints the checks as JSON instead, for a monitor.
import { runDoctor } from "./doctor.ts";

const MARKS = { ok: "✓", warning: "!", problem: "✗" } as const;

const args = process.argv.slice(2);
// exit statuses are set, not forced: the output is written whole before the process ends
if (args.some((arg) => arg !== "--json")) {
  console.error(`usage: cubicle doctor [--json] (got ${args.join(" ")})`);
  process.exitCode = 2;
} else {
  // as `npm start` reads it: a checkout without NODE_ENV runs in development (the api image sets production)
  const checks = await runDoctor({ ...process.env, NODE_ENV: process.env.NODE_ENV ?? "development" });
  const problems = checks.filter((check) => check.outcome === "problem").length;
  if (args.includes("--json")) {
    console.log(JSON.stringify({ ok: problems === 0, checks }, null, 2));
  } else {
    const width = Math.max(...checks.map((check) => check.name.length));
    for (const check of checks) {
      console.log(`${MARKS[check.outcome]} ${check.name.padEnd(width)}  ${check.detail}`);
      if (check.fix) console.log(`  ${" ".repeat(width)}  → ${check.fix}`);
    }
    const warnings = checks.filter((check) => check.outcome === "warning").length;
    console.log(
      problems === 0
        ? `\nAll good${warnings ? ` (${warnings} warning(s))` : ""}.`
        : `\n${problems} problem(s).`,
    );
  }
  process.exitCode = problems === 0 ? 0 : 1;
}
