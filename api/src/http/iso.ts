/** Timestamps leave the API as ISO 8601 strings in UTC, whatever the driver handed back. */
export const iso = (value: Date | string): string => new Date(value).toISOString();

export const isoOrNull = (value: Date | string | null | undefined): string | null =>
  value === null || value === undefined ? null : iso(value);
