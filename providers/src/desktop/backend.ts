import { join } from "node:path";
import type { Backend } from "../selection/backend.ts";

/** `desktop`: this host's own processes and X screens. */
export const desktopBackend: Backend = {
  onThisMachine: true,
  // extra host folders a computer may touch besides its home
  variables: [{ name: "DESKTOP_ALLOWED_ROOTS", type: "paths" }],
  async build({ variables, dataDir }) {
    const { createDesktopProvider } = await import("./index.ts");
    const roots = variables.DESKTOP_ALLOWED_ROOTS;
    return createDesktopProvider({
      homesDir: join(dataDir, "desktop-homes"),
      allowedRoots: Array.isArray(roots) ? [...roots] : [],
    });
  },
};
