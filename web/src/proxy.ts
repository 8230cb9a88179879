import { type NextRequest, NextResponse } from "next/server";
import { frameAncestors, framePolicyOf } from "@/embedding/frame-ancestors.ts";
import { formatParentOrigins, PARENT_ORIGINS_HEADER } from "@/embedding/parent-origins.ts";

const EMBED_PAGE = /^\/embed\/screen\/([^/]+)$/;

/**
 * Who may frame the embed page is its workspace's embed origins, which an admin changes at any time,
 * so they are looked up per request; here is where a page's response headers can be set. The page
 * gets the same list, to know which parents it may talk to, in a request header set here (replacing
 * any the browser sent). Every other /embed path is framed nowhere, like the rest of the dashboard
 * (next.config.ts).
 */
export async function proxy(request: NextRequest) {
  const workspaceId = embedPageWorkspace(request.nextUrl.pathname);
  const origins = workspaceId ? await framePolicyOf(workspaceId) : [];
  const requestHeaders = new Headers(request.headers);
  requestHeaders.set(PARENT_ORIGINS_HEADER, formatParentOrigins(origins));
  const response = NextResponse.next({ request: { headers: requestHeaders } });
  response.headers.set("Content-Security-Policy", frameAncestors(origins));
  // X-Frame-Options cannot name another site: it is said only when no site may frame the page.
  if (origins.length === 0) response.headers.set("X-Frame-Options", "DENY");
  return response;
}

function embedPageWorkspace(pathname: string): string | undefined {
  const segment = EMBED_PAGE.exec(pathname)?.[1];
  try {
    return segment && decodeURIComponent(segment);
  } catch {
    return undefined; // not an id the api could know
  }
}

export const config = { matcher: "/embed/:path*" };
