import type { Context } from "hono";
import type { Problem, SupervisorProblem } from "../problems.ts";

const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  404: "Not Found",
  409: "Conflict",
  411: "Length Required",
  413: "Content Too Large",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
};

export function problemBody(c: Context, problem: SupervisorProblem): Problem {
  return {
    type: `https://cubicle.dev/problems/supervisor/${problem.code.toLowerCase().replaceAll("_", "-")}`,
    title: TITLES[problem.status] ?? "Error",
    status: problem.status,
    code: problem.code,
    detail: problem.detail,
    instance: new URL(c.req.url).pathname,
    ...(problem.errors ? { errors: problem.errors } : {}),
  };
}

export function problemResponse(c: Context, problem: SupervisorProblem): Response {
  return c.body(JSON.stringify(problemBody(c, problem)), problem.status, {
    "content-type": "application/problem+json",
  });
}
