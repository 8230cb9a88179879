import { bareOrigin } from "@cubicle/config/origin";
import { apiOrigin } from "@/forwarding/api-origin.ts";

// The api is on the dashboard's own network; an answer slower than this frames the page nowhere
// rather than holding the iframe blank.
const LOOKUP_TIMEOUT_MS = 2_000;

/**
 * The origins a workspace lets frame its embed page, asked of the api's public route each time, so
 * that an admin's change holds at once. An api that cannot answer lets nobody frame it.
 */
export async function framePolicyOf(workspaceId: string): Promise<string[]> {
  const url = new URL(`/embed/frame-policy/${encodeURIComponent(workspaceId)}`, apiOrigin());
  try {
    const response = await fetch(url, { cache: "no-store", signal: AbortSignal.timeout(LOOKUP_TIMEOUT_MS) });
    if (!response.ok) throw new Error(`it answered ${response.status}`);
    const { origins } = (await response.json()) as { origins?: unknown };
    // They go into a response header: anything but a bare origin could add a directive or break it.
    return Array.isArray(origins)
      ? origins.filter((origin) => typeof origin === "string" && bareOrigin(origin) === origin)
      : [];
  } catch (error) {
    console.error(
      `embed page of workspace ${JSON.stringify(workspaceId)} framed nowhere: the api's embed origins could not be read (${error instanceof Error ? error.message : String(error)})`,
    );
    return [];
  }
}

export function frameAncestors(origins: readonly string[]): string {
  return `frame-ancestors ${origins.length > 0 ? origins.join(" ") : "'none'"}`;
}
