import { ProviderError } from "@cubicle/providers/contract";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { toHttpProblem } from "./errors.ts";
import { problemResponse } from "./problem.ts";

/** A route that fails with `error`, answered as the api answers every failure. */
function failingWith(error: Error) {
  const app = new Hono();
  app.get("/", () => {
    throw error;
  });
  app.onError((thrown, c) => {
    const problem = toHttpProblem(thrown);
    if (!problem) throw thrown;
    return problemResponse(c, problem);
  });
  return app.request("/");
}

describe("provider failures as problems", () => {
  it("answer a provider that does not answer with 503 and when to try again", async () => {
    const response = await failingWith(
      new ProviderError("PROVIDER_UNAVAILABLE", "the supervisor at http://127.0.0.1:7091 is not reachable"),
    );
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("5");
    expect(await response.json()).toMatchObject({
      code: "PROVIDER_UNAVAILABLE",
      detail: "the supervisor at http://127.0.0.1:7091 is not reachable",
    });
  });

  it("give no Retry-After to a failure that will not pass by waiting", async () => {
    const response = await failingWith(new ProviderError("PROVIDER_AUTH_FAILED", "check E2B_API_KEY"));
    expect(response.status).toBe(502);
    expect(response.headers.get("retry-after")).toBeNull();
  });
});
