/**
 * What a revision leaves out of a home: Chromium's caches. They are large, change on every page
 * view (so every revision would store them again), hold copies of what sites served, and Chromium
 * rebuilds each of them when it finds it missing, so a restored profile without them still opens
 * signed in (cookies, local storage, IndexedDB, preferences and extensions are kept).
 *
 * Paths are home-relative segments; `*` stands for any one segment. A browser's user data folder
 * is any folder under `.browser-profiles/` (where the computers' browsers keep theirs) or
 * Chromium's default `.config/chromium`; a profile is any folder directly in it (`Default`,
 * `Profile 1`, `Guest Profile`, …). The names are the folders Chromium makes for its HTTP and
 * code caches, its GPU, Dawn and shader caches, service workers' cache storage and scripts, and
 * downloaded component and extension packages; nothing else in a profile is left out.
 */
const USER_DATA_FOLDERS = [
  [".browser-profiles", "*"],
  [".config", "chromium"],
];

/** Caches shared by all profiles of one user data folder. */
const USER_DATA_CACHES = [
  ["GrShaderCache"],
  ["GraphiteDawnCache"],
  ["ShaderCache"],
  ["component_crx_cache"],
  ["extensions_crx_cache"],
];

/** Caches of one profile (and of each extension's storage partition inside it). */
const PROFILE_CACHES = [
  ["Cache"],
  ["Code Cache"],
  ["GPUCache"],
  ["DawnCache"],
  ["DawnGraphiteCache"],
  ["DawnWebGPUCache"],
  ["Media Cache"],
  ["Application Cache"],
  ["Service Worker", "CacheStorage"],
  ["Service Worker", "ScriptCache"],
  ["Storage", "ext", "*", "def", "GPUCache"],
  ["Storage", "ext", "*", "def", "Code Cache"],
];

/** Every cache folder of every profile, as patterns of path segments. */
export const EXCLUDED_FROM_REVISIONS: readonly (readonly string[])[] = [
  // without --user-data-dir Chromium puts its disk caches here, apart from the profile
  [".cache", "chromium"],
  ...USER_DATA_FOLDERS.flatMap((folder) => [
    ...USER_DATA_CACHES.map((cache) => [...folder, ...cache]),
    ...PROFILE_CACHES.map((cache) => [...folder, "*", ...cache]),
  ]),
];

/** Whether a home-relative path is, or lies inside, a folder revisions leave out. */
export function excludedFromRevisions(path: string): boolean {
  const segments = path.split("/");
  return EXCLUDED_FROM_REVISIONS.some(
    (pattern) =>
      segments.length >= pattern.length &&
      pattern.every((part, index) => part === "*" || part === segments[index]),
  );
}
