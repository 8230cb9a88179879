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

describe("an unreachable database as a problem", () => {
  const answered = async (error: Error) => {
    const response = await failingWith(error);
    return [response.status, response.headers.get("retry-after"), (await response.json()).code];
  };
  const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

  it("answers 503 DATABASE_UNAVAILABLE and when to try again, however the driver said it", async () => {
    const unavailable = [503, "5", "DATABASE_UNAVAILABLE"];
    expect(await answered(withCode("connect ECONNREFUSED 127.0.0.1:5432", "ECONNREFUSED"))).toEqual(
      unavailable,
    );
    expect(await answered(withCode("terminating connection due to administrator command", "57P01"))).toEqual(
      unavailable,
    );
    expect(await answered(withCode("the database system is starting up", "57P03"))).toEqual(unavailable);
    expect(await answered(withCode("connection failure", "08006"))).toEqual(unavailable);
    expect(await answered(new Error("Connection terminated unexpectedly"))).toEqual(unavailable);
    expect(await answered(new Error("timeout exceeded when trying to connect"))).toEqual(unavailable);
    expect(
      await answered(new AggregateError([withCode("connect ECONNREFUSED ::1:5432", "ECONNREFUSED")], "")),
    ).toEqual(unavailable);
  });

  it("leaves a statement the database refused to the caller (500)", () => {
    expect(toHttpProblem(withCode('relation "bots" does not exist', "42P01"))).toBeUndefined();
    expect(toHttpProblem(withCode("duplicate key value", "23505"))).toBeUndefined();
  });
});
