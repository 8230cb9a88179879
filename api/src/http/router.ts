import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../context.ts";
import { HttpProblem } from "./problem.ts";

/** Every router shares one validation hook, so bad input reads the same on every route. */
export function createRouter(): OpenAPIHono<AppEnv> {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (result.success) return;
      throw new HttpProblem(
        400,
        "VALIDATION_FAILED",
        `The ${result.target} is not valid.`,
        result.error.issues.map((issue) => ({
          path: [result.target, ...issue.path.map(String)].join("."),
          message: issue.message,
        })),
      );
    },
  });
}
