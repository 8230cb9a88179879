import { randomBytes } from "node:crypto";
import { inject } from "vitest";
import { type Bot, Cubicle, must } from "../src/index.ts";
import type { ClientDeployment } from "./deployment.ts";

export type { ClientDeployment } from "./deployment.ts";

/** The run's deployment (see deployment.ts), as a suite of the `client` project is given it. */
export const deployment = (): ClientDeployment => inject("clientDeployment");

/** A client as an automation holds one: the deployment's url and a member's API key. */
export const memberClient = (options: { retries?: number } = {}) =>
  new Cubicle({ url: deployment().url, apiKey: deployment().memberKey, ...options });

/**
 * A bot of its own for one test, made by an admin (what the automation is handed): on the
 * workspace's Team Computer (a screen of its own), or `private` on a computer of its own.
 */
export async function makeBot(label: string, mode: "team" | "private" = "team"): Promise<Bot> {
  const admin = new Cubicle({ url: deployment().url, apiKey: deployment().adminKey });
  const workspaceId = await admin.workspaceId();
  return must(
    admin.api.POST("/v1/workspaces/{workspaceId}/bots", {
      params: { path: { workspaceId } },
      body: {
        name: `${label} ${randomBytes(3).toString("hex")}`,
        charter: {
          purpose: "is driven by the client suites",
          boundary: "stays in its folder",
          privacyReason: mode === "private" ? "its restores must not touch the other suites' work" : "",
        },
        computerMode: mode,
      },
    }),
  );
}

export { pngSize } from "./png.ts";
