import { PROVIDER_KINDS } from "@cubicle/providers";
import { createRoute, z } from "@hono/zod-openapi";
import { ProblemSchema } from "../http/problem.ts";
import { createRouter } from "../http/router.ts";

const HealthSchema = z
  .object({
    ok: z.boolean().openapi({ description: "True when `status` is ok." }),
    status: z.enum(["ok", "degraded", "down"]).openapi({
      description:
        "ok: the database and the provider answer. degraded: the database answers but the provider in effect does not (or refuses Cubicle's credential): the dashboard, sign-in and the API's records work; computers cannot start, stop or be used (answered 503 PROVIDER_UNAVAILABLE with Retry-After). down: the database does not answer (HTTP 503).",
    }),
    version: z.string(),
    db: z.enum(["ok", "error"]),
    provider: z.enum(["ok", "error", "unknown"]).openapi({
      description: "Whether the provider in effect answers (unknown while the database is down).",
    }),
    providerProblem: z
      .string()
      .nullable()
      .openapi({ description: "When `provider` is error: the problem's code and what failed." }),
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
  operationId: "getHealth",
  method: "get",
  path: "/health",
  summary: "Liveness, database and provider health",
  tags: ["Operations"],
  responses: {
    200: {
      description: "Serving: healthy, or degraded while the provider does not answer",
      content: { "application/json": { schema: HealthSchema } },
    },
    503: {
      description: "The database does not answer",
      content: { "application/json": { schema: HealthSchema } },
    },
  },
});

const metrics = createRoute({
  operationId: "getMetrics",
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
            status: "down" as const,
            db: "error" as const,
            provider: "unknown" as const,
            providerProblem: null,
            sandbox: configured,
            configured,
            override: null,
            sandboxNote: note,
          },
          503,
        );
      }
      const [choice, trouble] = await Promise.all([sandbox.choice(), sandbox.healthAccess()]);
      return c.json(
        {
          ...base,
          // a replica whose provider is down still serves the dashboard, sign-in and records, so it
          // stays 200: taking every replica out of a load balancer would help nobody
          ok: trouble === null,
          status: trouble === null ? ("ok" as const) : ("degraded" as const),
          db: "ok" as const,
          provider: trouble === null ? ("ok" as const) : ("error" as const),
          providerProblem: trouble && `${trouble.code}: ${trouble.detail}`,
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
