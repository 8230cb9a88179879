import { createRoute, z } from "@hono/zod-openapi";
import { createRouter } from "../http/router.ts";

const HealthSchema = z
  .object({
    ok: z.boolean(),
    version: z.string(),
    db: z.enum(["ok", "error"]),
    dbDialect: z.enum(["pglite", "postgres"]),
    sandbox: z
      .string()
      .openapi({ description: 'The effective sandbox provider; "none" until providers land.' }),
  })
  .openapi("Health");

const health = createRoute({
  method: "get",
  path: "/health",
  summary: "Liveness and database health",
  tags: ["Operations"],
  responses: {
    200: { description: "Healthy", content: { "application/json": { schema: HealthSchema } } },
    503: {
      description: "The database does not answer",
      content: { "application/json": { schema: HealthSchema } },
    },
  },
});

const metrics = createRoute({
  method: "get",
  path: "/metrics",
  summary: "Prometheus metrics",
  tags: ["Operations"],
  responses: {
    200: { description: "Prometheus text format", content: { "text/plain": { schema: z.string() } } },
  },
});

export function healthRoutes() {
  return createRouter()
    .openapi(health, async (c) => {
      const { database, version } = c.var.deps;
      const dbOk = await database.ping();
      const body = {
        ok: dbOk,
        version,
        db: dbOk ? "ok" : "error",
        dbDialect: database.dialect,
        sandbox: "none",
      } as const;
      return dbOk ? c.json(body, 200) : c.json(body, 503);
    })
    .openapi(metrics, async (c) => {
      const { registry } = c.var.deps.metrics;
      return c.text(await registry.metrics(), 200, { "content-type": registry.contentType });
    });
}
