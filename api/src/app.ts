import { secureHeaders } from "hono/secure-headers";
import { apiKeyRoutes } from "./api-keys/routes.ts";
import { auditRoutes } from "./audit/routes.ts";
import { authenticate } from "./auth/authenticate.ts";
import { authHandlerRoutes } from "./auth/handler.ts";
import { accountRoutes } from "./auth/routes.ts";
import { botRoutes } from "./bots/routes.ts";
import { checkpointRoutes } from "./checkpoints/routes.ts";
import { computerRoutes } from "./computers/routes.ts";
import type { AppDeps } from "./context.ts";
import { credentialRoutes } from "./credentials/routes.ts";
import { deploymentRoutes } from "./deployment/routes.ts";
import { doctorRoutes } from "./doctor/routes.ts";
import { egressRoutes } from "./egress/routes.ts";
import { embeddingRoutes } from "./embedding/routes.ts";
import { eventRoutes } from "./events/routes.ts";
import { healthRoutes } from "./health/routes.ts";
import { accessLog } from "./http/access-log.ts";
import { wellFormedText } from "./http/body.ts";
import { toHttpProblem } from "./http/errors.ts";
import { HttpProblem, noSuchRoute, problemResponse } from "./http/problem.ts";
import { requestContext, requestIds } from "./http/request-context.ts";
import { createRouter } from "./http/router.ts";
import { proxyRoutes } from "./internal/proxy-routes.ts";
import { invitationRoutes } from "./invitations/routes.ts";
import { memberRoutes } from "./members/routes.ts";
import { metricsAccess } from "./observability/metrics-access.ts";
import { referenceRoutes } from "./openapi/reference.ts";
import { recordingIngestRoutes, recordingRoutes } from "./recordings/index.ts";
import { screenRoutes } from "./screens/routes.ts";
import { sessionRoutes } from "./sessions/routes.ts";
import { computerToolRoutes } from "./tools/computer-routes.ts";
import { workspaceRoutes } from "./workspaces/routes.ts";

const OPENAPI_PATH = "/openapi.json";

export function createApp(deps: AppDeps) {
  const app = createRouter();

  app.use("*", requestIds());
  app.use("*", async (c, next) => {
    c.set("deps", deps);
    await next();
  });
  app.use("*", requestContext({ trustedProxies: deps.env.trustedProxies }));
  app.use("*", accessLog());
  app.use("*", deps.metrics.middleware);
  app.use("*", secureHeaders({ crossOriginResourcePolicy: "same-site" }));
  app.use("*", wellFormedText());
  app.use("/v1/*", authenticate());
  app.use("/metrics", metricsAccess(deps.env.metricsToken));

  app.route("/", healthRoutes());
  app.route("/", authHandlerRoutes());
  app.route("/", accountRoutes());
  app.route("/", workspaceRoutes());
  app.route("/", memberRoutes());
  app.route("/", invitationRoutes());
  app.route("/", apiKeyRoutes());
  app.route("/", credentialRoutes());
  app.route("/", auditRoutes());
  app.route("/", deploymentRoutes());
  app.route("/", botRoutes());
  app.route("/", computerRoutes());
  app.route("/", egressRoutes());
  app.route("/", embeddingRoutes());
  app.route("/", computerToolRoutes());
  app.route("/", checkpointRoutes());
  app.route("/", screenRoutes());
  app.route("/", sessionRoutes());
  app.route("/", recordingRoutes());
  app.route("/", eventRoutes());
  app.route("/", proxyRoutes());
  app.route("/", recordingIngestRoutes());
  app.route("/", doctorRoutes());
  app.route("/", referenceRoutes(OPENAPI_PATH));

  app.openAPIRegistry.registerComponent("securitySchemes", "session", {
    type: "apiKey",
    in: "cookie",
    name: "better-auth.session_token",
    description: "Set by sign-in. State changes must also carry a trusted Origin header.",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "apiKey", {
    type: "apiKey",
    in: "header",
    name: "X-Api-Key",
    description: "A workspace API key (also accepted as `Authorization: Bearer <key>`).",
  });
  app.doc31(OPENAPI_PATH, {
    openapi: "3.1.0",
    info: {
      title: "Cubicle API",
      version: deps.version,
      description: "Control plane for bot computers. Errors are RFC 9457 problem JSON with a stable `code`.",
    },
  });

  // A catch-all route rather than notFound(), so that unknown paths pass through the same
  // middleware (request id, security headers, authentication, logs) as known ones.
  app.all("*", () => {
    throw noSuchRoute();
  });
  app.onError((error, c) => {
    const problem = toHttpProblem(error);
    if (problem) return problemResponse(c, problem);
    deps.logger.error({ err: error, requestId: c.var.requestId }, "unhandled error");
    const detail = "Something went wrong; the request id identifies it in the logs.";
    return problemResponse(c, new HttpProblem(500, "INTERNAL", detail));
  });

  return app;
}
