import { CubicleError } from "../index.ts";

/** A refusal by the CLI itself (bad usage, no credentials, no open session): exit 2, as usage errors are. */
export class CliError extends Error {
  constructor(
    readonly code: "USAGE" | "NOT_CONFIGURED" | "NO_SESSION",
    message: string,
    /** The usage to print after the message, for a command used wrongly. */
    readonly usage?: string,
  ) {
    super(message);
  }
}

/** Exit codes: 1 the api refused, 2 the CLI did (usage, no credentials, no session). */
export const EXIT = { ok: 0, api: 1, usage: 2 } as const;

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function line(text = ""): void {
  process.stdout.write(`${text}\n`);
}

/** Rows under a header, columns padded to their widest cell; "(none)" for no rows. */
export function table(header: string[], rows: string[][]): void {
  if (rows.length === 0) {
    line("(none)");
    return;
  }
  const widths = header.map((title, i) =>
    Math.max(title.length, ...rows.map((row) => (row[i] ?? "").length)),
  );
  const format = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  line(format(header));
  for (const row of rows) line(format(row));
}

/** Label / value lines, the values aligned. */
export function fields(pairs: [string, string][]): void {
  const width = Math.max(...pairs.map(([label]) => label.length));
  for (const [label, value] of pairs) line(`${label.padEnd(width)}  ${value}`);
}

/**
 * Announces a long operation on stderr and reports how long it took ("Starting computer… done in
 * 12.3 s"): stdout stays what a script reads.
 */
export async function progress<T>(label: string, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  process.stderr.write(`${label}…`);
  try {
    const result = await work();
    process.stderr.write(` done in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
    return result;
  } catch (error) {
    process.stderr.write(" failed\n");
    throw error;
  }
}

/** Prints an error the way the CLI reports them and gives its exit code. */
export function reportError(error: unknown, json: boolean): number {
  if (error instanceof CliError) {
    if (json) process.stderr.write(`${JSON.stringify({ code: error.code, detail: error.message })}\n`);
    else process.stderr.write(`error: ${error.message}\n${error.usage ? `\n${error.usage}\n` : ""}`);
    return EXIT.usage;
  }
  if (error instanceof CubicleError) {
    if (json) process.stderr.write(`${JSON.stringify(error.problem)}\n`);
    // COMPUTER_BUSY's detail names the holder, its session and until when
    else process.stderr.write(`error: ${error.detail} (${error.code})\n`);
    return EXIT.api;
  }
  // the api unreachable, a local file unreadable: still one short line, not a stack
  const message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : "";
  if (json) process.stderr.write(`${JSON.stringify({ code: "FAILED", detail: message + cause })}\n`);
  else process.stderr.write(`error: ${message}${cause}\n`);
  return EXIT.api;
}

/** A byte count for people: 512 B, 1.5 KiB, 3.2 MiB. */
export function bytes(count: number): string {
  const units = ["B", "KiB", "MiB", "GiB"];
  let value = count;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} ${units[0]}` : `${value.toFixed(1)} ${units[unit]}`;
}
