import { PROVIDER_KINDS } from "@cubicle/providers/contract";
import { createRoute, z } from "@hono/zod-openapi";
import { ProblemSchema } from "../http/problem.ts";
import { createRouter } from "../http/router.ts";

const HealthSchema = z
  .object({
    ok: z.boolean(),
    version: z.string(),
    db: z.enum(["ok", "error"]),
    dbDialect: z.enum(["pglite", "postgres"]),
    sandbox: z.enum(PROVIDER_KINDS).openapi({ description: "The provider new computers use right now." }),
    configured: z.enum(PROVIDER_KINDS).openapi({ description: "SANDBOX_PROVIDER as configured." }),
    override: z
      .enum(["isolated", "this-host"])
      .nullable()
      .openapi({ description: "The deployment's computer host setting (null while the database is down)." }),
    sandboxNote: z.string().nullable().openapi({ description: "Why `sandbox` differs from `configured`." }),
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
  description:
    "Answers only to `Authorization: Bearer <METRICS_TOKEN>`; a deployment without METRICS_TOKEN has no /metrics.",
  tags: ["Operations"],
  responses: {
    200: { description: "Prometheus text format", content: { "text/plain": { schema: z.string() } } },
    401: {
      description: "No or another bearer token (METRICS_TOKEN_REQUIRED)",
      content: { "application/problem+json": { schema: ProblemSchema } },
    },
    404: {
      description: "METRICS_TOKEN is not configured (NOT_FOUND)",
      content: { "application/problem+json": { schema: ProblemSchema } },
    },
  },
});

export function healthRoutes() {
  return createRouter()
    .openapi(health, async (c) => {
      const { database, env, sandbox, version } = c.var.deps;
      const base = { version, dbDialect: database.dialect };
      if (!(await database.ping())) {
        const configured = env.sandbox.provider;
        const note = "the computer host setting is unknown while the database does not answer";
        return c.json(
          {
            ...base,
            ok: false,
            db: "error" as const,
            sandbox: configured,
            configured,
            override: null,
            sandboxNote: note,
          },
          503,
        );
      }
      const choice = await sandbox.choice();
      return c.json(
        {
          ...base,
          ok: true,
          db: "ok" as const,
          sandbox: choice.effective,
          configured: choice.configured,
          override: choice.computerHost,
          sandboxNote: choice.reason,
        },
        200,
      );
    })
    .openapi(metrics, async (c) => {
      const { registry } = c.var.deps.metrics;
      return c.text(await registry.metrics(), 200, { "content-type": registry.contentType });
    });
}
