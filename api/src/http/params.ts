import { z } from "@hono/zod-openapi";

/** The path parameters every workspace route shares, declared once for all their folders. */
export const WorkspaceIdParam = z.object({
  workspaceId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: "workspaceId", in: "path" } }),
});

/** A computer's routes: the workspace and the computer. */
export const ComputerParams = WorkspaceIdParam.extend({
  computerId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: "computerId", in: "path" } }),
});
