import type { Metadata } from "next";
import { headers } from "next/headers";
import { EmbeddedScreen } from "@/embedding/embedded-screen.tsx";
import { PARENT_ORIGINS_HEADER, parseParentOrigins } from "@/embedding/parent-origins.ts";

export const metadata: Metadata = { title: "Cubicle live screen" };

/**
 * A workspace's live screen for an iframe on another site: no sign-in and no dashboard around it;
 * the capabilities its parent sends are its only credentials. src/proxy.ts looked up which origins
 * may frame it and passes the same list on, so the parents it talks to are the ones allowed to frame it.
 */
export default async function EmbeddedScreenPage() {
  return <EmbeddedScreen parentOrigins={parseParentOrigins((await headers()).get(PARENT_ORIGINS_HEADER))} />;
}
