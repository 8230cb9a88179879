// How numbers and times are shown, the same on every page.

const UNITS = ["B", "KB", "MB", "GB", "TB"];

/** "1.4 MB" for 1_468_006 bytes (binary multiples, one decimal below 10). */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const shown = unit === 0 || value >= 10 ? Math.round(value).toString() : value.toFixed(1);
  return `${shown} ${UNITS[unit]}`;
}

/** A moment in the reader's own locale and time zone, in full ("11/29/2026, 8:01:59 PM"). */
export function exactTime(iso: string): string {
  return new Date(iso).toLocaleString();
}
