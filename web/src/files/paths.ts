/** Home-relative paths as the api uses them: "" is the home, folders are joined with "/". */

export const joinPath = (folder: string, name: string) => (folder ? `${folder}/${name}` : name);

export const parentOf = (path: string) => path.split("/").slice(0, -1).join("/");

/** The home and each folder down to `path`, for breadcrumbs. */
export function crumbsOf(path: string): { name: string; path: string }[] {
  const parts = path.split("/").filter(Boolean);
  return [
    { name: "Home", path: "" },
    ...parts.map((name, index) => ({ name, path: parts.slice(0, index + 1).join("/") })),
  ];
}
