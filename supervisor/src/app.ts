import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { requireBearer } from "./auth.ts";
import type { ContainerManager } from "./containers/manager.ts";
import { problemResponse } from "./http/problem-response.ts";
import { SupervisorProblem } from "./problems.ts";
import { archiveRoutes } from "./routes/archive.ts";
import { browserRoutes } from "./routes/browsers.ts";
import { computerRoutes } from "./routes/computers.ts";
import { egressRoutes } from "./routes/egress.ts";
import { execRoutes } from "./routes/exec.ts";
import { fileRoutes } from "./routes/files.ts";
import { healthRoutes } from "./routes/health.ts";
import { reconcileRoutes } from "./routes/reconcile.ts";
import { screenRoutes } from "./routes/screens.ts";

export interface AppDeps {
  token: string;
  manager: ContainerManager;
  /** Where unexpected errors go; they answer a bare 500 without details. */
  logError?: (error: unknown) => void;
}

export function createApp({ token, manager, logError = console.error }: AppDeps) {
  const app = new Hono();
  app.use("*", requireBearer(token, new Set(["/health", "/alive"])));
  app.route("/", healthRoutes(manager));
  app.route("/", computerRoutes(manager));
  app.route("/", egressRoutes(manager));
  app.route("/", execRoutes(manager));
  app.route("/", fileRoutes(manager));
  app.route("/", archiveRoutes(manager));
  app.route("/", screenRoutes(manager));
  app.route("/", browserRoutes(manager));
  app.route("/", reconcileRoutes(manager));

  app.notFound((c) =>
    problemResponse(c, new SupervisorProblem("NOT_FOUND", `no route ${c.req.method} ${c.req.path}`)),
  );
  app.onError((error, c) => {
    if (error instanceof SupervisorProblem) return problemResponse(c, error);
    if (error instanceof HTTPException && error.status < 500) {
      return problemResponse(c, new SupervisorProblem("INVALID_REQUEST", error.message));
    }
    logError(error);
    return problemResponse(c, new SupervisorProblem("INTERNAL", "the supervisor failed; see its log"));
  });
  return app;
}
