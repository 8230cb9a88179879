/**
 * Orders by name in byte order, not the locale's: every backend lists a folder, and the supervisor
 * reports its screens and checks, in the same order whatever the host's language.
 */
export const byName = (a: { name: string }, b: { name: string }): number =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
