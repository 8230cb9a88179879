import type { Context } from "hono";
import type { AppEnv } from "../context.ts";
import { requireComputer } from "./repository.ts";

// What the routes about one computer share, in its own folder and in checkpoints, egress and tools.

export const COMPUTERS = "/v1/workspaces/{workspaceId}/computers";

export const PROVIDER_PROBLEMS = {
  409: { description: "Busy (COMPUTER_BUSY), or changing state elsewhere (COMPUTER_TRANSITIONING)" },
  502: {
    description: "The provider failed (PROVIDER_FAILURE), or refused its API key (PROVIDER_AUTH_FAILED)",
  },
  503: {
    description:
      "Computers are disabled (SANDBOX_DISABLED), or the provider does not answer (PROVIDER_UNAVAILABLE, with Retry-After)",
  },
} as const;

/** The computer the route's path names, in the caller's workspace (404 otherwise). */
export const computerOf = (c: Context<AppEnv>) =>
  requireComputer(c.var.deps.database.db, c.var.workspace.workspaceId, c.req.param("computerId") ?? "");
