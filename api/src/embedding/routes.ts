import { z } from "@hono/zod-openapi";
import { defineRoute } from "../access/define-route.ts";
import { actorOf } from "../auth/principal.ts";
import { jsonResponse as json } from "../http/openapi.ts";
import { WorkspaceIdParam } from "../http/params.ts";
import { createRouter } from "../http/router.ts";
import { EmbedOriginsSchema, embedOriginsOf, setEmbedOrigins } from "./origins.ts";

const PATH = "/v1/workspaces/{workspaceId}/embed-origins";
const tags = ["Embedding"];

const getOrigins = defineRoute(
  { kind: "workspace", minRole: "viewer" },
  {
    operationId: "getEmbedOrigins",
    method: "get",
    path: PATH,
    summary: "Which other web origins may show this workspace's live screens",
    tags,
    request: { params: WorkspaceIdParam },
    responses: { 200: json("OK", EmbedOriginsSchema) },
  },
);

const setOrigins = defineRoute(
  { kind: "workspace", minRole: "admin", people: true },
  {
    operationId: "setEmbedOrigins",
    method: "put",
    path: PATH,
    summary: "Set which other web origins may show this workspace's live screens",
    description:
      "Replaces the list. Sockets already open from an origin no longer listed are closed within a second.",
    tags,
    request: {
      params: WorkspaceIdParam,
      body: { required: true, content: { "application/json": { schema: EmbedOriginsSchema } } },
    },
    responses: { 200: json("Set", EmbedOriginsSchema) },
  },
);

// A workspace id, as the dashboard's embed page names it in its path; anything else lists nothing.
const FramePolicyParams = z.object({ workspaceId: z.string().min(1).max(200) });

export function embeddingRoutes() {
  return (
    createRouter()
      .openapi(getOrigins, async (c) =>
        c.json({ origins: await embedOriginsOf(c.var.deps.database.db, c.var.workspace.workspaceId) }, 200),
      )
      .openapi(setOrigins, async (c) => {
        const { origins } = c.req.valid("json");
        await setEmbedOrigins(c.var.deps, c.var.workspace.workspaceId, origins, actorOf(c.var.principal));
        return c.json({ origins }, 200);
      })
      /**
       * For the dashboard's embed page, which asks it (without credentials) for the origins its
       * `frame-ancestors` lets frame it. Public, as that header is to anyone who loads the page; an
       * unknown workspace answers as one that lists nothing, so it tells nobody which ids exist.
       * Not part of the public API (no /v1, not in the OpenAPI document).
       */
      .get("/embed/frame-policy/:workspaceId", async (c) => {
        const parsed = FramePolicyParams.safeParse(c.req.param());
        const origins = parsed.success
          ? await embedOriginsOf(c.var.deps.database.db, parsed.data.workspaceId)
          : [];
        c.header("cache-control", "no-store");
        return c.json({ origins }, 200);
      })
  );
}
