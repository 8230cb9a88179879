/** One shell word holding exactly `value` (POSIX single quotes; a quote becomes '\''). */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}
