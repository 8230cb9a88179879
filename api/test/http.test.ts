import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectStatus, startTestApi, type TestApi } from "../testing/harness.ts";
import { documentedRoutes, openApiDocument } from "../testing/openapi.ts";

const METRICS_TOKEN = randomBytes(32).toString("base64url");
let t: TestApi;
beforeAll(async () => {
  t = await startTestApi({ METRICS_TOKEN });
});
afterAll(() => t?.close());

describe("the API's HTTP surface", () => {
  it("GET /health reports version, database and sandbox", async () => {
    const health = expectStatus(await t.client().get("/health"), 200).json;
    expect(health).toEqual({
      ok: true,
      status: "ok",
      version: "0.1.0",
      db: "ok",
      provider: "ok",
      providerProblem: null,
      dbDialect: process.env.CUBICLE_TEST_DB === "postgres" ? "postgres" : "pglite",
      sandbox: "fake",
      configured: "fake",
      override: "isolated",
      sandboxNote: null,
    });
  });

  it("publishes an OpenAPI 3.1 document where every /v1 route states its access and security", async () => {
    const doc = expectStatus(await t.client().get("/openapi.json"), 200).json;
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(["apiKey", "session"]);
    expect(doc.components.schemas.Problem).toBeDefined();
    const operations = Object.entries(
      doc.paths as Record<
        string,
        Record<string, { description?: string; security?: unknown[]; responses: Record<string, unknown> }>
      >,
    )
      .filter(([path]) => path.startsWith("/v1/"))
      .flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method, op })));
    expect(operations.length).toBeGreaterThan(15);
    for (const { path, method, op } of operations) {
      expect(op.description, `${method} ${path}`).toMatch(/Access: /);
      expect(op.security?.length, `${method} ${path}`).toBeGreaterThan(0);
      expect(Object.keys(op.responses), `${method} ${path}`).toEqual(
        expect.arrayContaining(["401", "403", "404"]),
      );
    }
    expect(doc.paths["/api/auth/sign-up/email"]?.post).toBeDefined();
  });

  it("names every operation of the document with its own operationId, which generated clients call it by", async () => {
    const doc = await openApiDocument(t.client());
    const routes = documentedRoutes(doc);
    const missing = routes
      .filter(({ operation }) => !operation.operationId)
      .map(({ method, path }) => `${method} ${path}`);
    expect(missing).toEqual([]);
    const byId = new Map<string, string[]>();
    for (const { method, path, operation } of routes) {
      const id = operation.operationId as string;
      expect(id, `${method} ${path}`).toMatch(/^[a-z][A-Za-z]+$/);
      byId.set(id, [...(byId.get(id) ?? []), `${method} ${path}`]);
    }
    expect([...byId].filter(([, named]) => named.length > 1)).toEqual([]);
    // a few by name, as a client relies on them staying put
    const idOf = (method: string, path: string) =>
      routes.find((route) => route.method === method && route.path === path)?.operation.operationId;
    expect(idOf("POST", "/v1/workspaces/{workspaceId}/bots/{botId}/sessions")).toBe("openSession");
    expect(idOf("POST", "/v1/workspaces/{workspaceId}/bots/{botId}/sessions/{sessionId}/shell")).toBe(
      "runSessionShell",
    );
    expect(idOf("GET", "/health")).toBe("getHealth");
    expect(idOf("POST", "/api/auth/sign-in/email")).toBe("signInWithEmail");
    expect(routes.length).toBe(byId.size);
  });

  it("serves the interactive reference from local assets", async () => {
    const client = t.client();
    const page = expectStatus(await client.get("/reference"), 200);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(page.text).toContain("/reference/swagger-ui-bundle.js");
    expect(page.text).not.toMatch(/https?:\/\//);
    const bundle = expectStatus(await client.get("/reference/swagger-ui-bundle.js"), 200);
    expect(bundle.text.length).toBeGreaterThan(100_000);
    expect(expectStatus(await client.get("/reference/init.js"), 200).text).toContain('"/openapi.json"');
  });

  it("answers unknown routes, bad JSON and invalid input with RFC 9457 problem JSON", async () => {
    const client = t.client();
    const missing = await client.get("/v1/nothing-here");
    expect(missing.json).toMatchObject({ status: 404, code: "NOT_FOUND" });
    const unknown = await client.get("/nothing-here");
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get("content-type")).toBe("application/problem+json");
    expect(unknown.json).toMatchObject({ status: 404, code: "NOT_FOUND", instance: "/nothing-here" });
    expect(unknown.json.requestId).toBe(unknown.headers.get("x-request-id"));
    expect(unknown.headers.get("x-content-type-options")).toBe("nosniff");

    expectStatus(await client.signUp("http-owner@example.com"), 200);
    const malformed = await client.post("/v1/workspaces", "{not json");
    expect(malformed.status).toBe(400);
    expect(malformed.headers.get("content-type")).toBe("application/problem+json");
    expect(malformed.json).toMatchObject({ status: 400, code: "MALFORMED_REQUEST" });

    const invalid = await client.post("/v1/workspaces", { name: "", slug: "NO SPACES" });
    expect(invalid.status).toBe(400);
    expect(invalid.json.code).toBe("VALIDATION_FAILED");
    expect(invalid.json.errors.map((e: { path: string }) => e.path).sort()).toEqual([
      "json.name",
      "json.slug",
    ]);
  });

  it("keeps a caller's plain request id and replaces a hostile one", async () => {
    const client = t.client();
    const kept = await client.get("/health", { headers: { "x-request-id": "trace-123" } });
    expect(kept.headers.get("x-request-id")).toBe("trace-123");
    const replaced = await client.get("/health", { headers: { "x-request-id": "bad id\twith tabs" } });
    expect(replaced.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("exposes Prometheus metrics labelled by route pattern", async () => {
    const client = t.client();
    await client.get("/health");
    const metrics = expectStatus(
      await client.get("/metrics", { headers: { authorization: `Bearer ${METRICS_TOKEN}` } }),
      200,
    );
    expect(metrics.headers.get("content-type")).toContain("text/plain");
    expect(metrics.text).toMatch(
      /cubicle_http_requests_total\{method="GET",route="\/health",status="200"\} \d+/,
    );
    expect(metrics.text).toContain("cubicle_http_request_duration_seconds_bucket");
    expect(metrics.text).toContain("process_resident_memory_bytes");
  });

  it("refuses /metrics without its bearer token, with a wrong one, and with the token in the URL", async () => {
    const client = t.client();
    const attempts: Record<string, string>[] = [
      {},
      { authorization: `Bearer ${METRICS_TOKEN}x` },
      { authorization: METRICS_TOKEN },
    ];
    for (const headers of attempts) {
      const refused = expectStatus(await client.get("/metrics", { headers }), 401);
      expect(refused.headers.get("content-type")).toContain("application/problem+json");
      expect(refused.headers.get("www-authenticate")).toMatch(/^Bearer /);
      expect(refused.json).toMatchObject({ status: 401, code: "METRICS_TOKEN_REQUIRED" });
      expect(refused.text).not.toContain("process_resident_memory_bytes");
    }
    // A secret in a URL ends up in logs and histories: the query is never read.
    expectStatus(await client.get(`/metrics?token=${METRICS_TOKEN}`), 401);
  });

  it("has no /metrics at all when no METRICS_TOKEN is configured", async () => {
    const bare = await startTestApi();
    try {
      const missing = expectStatus(await bare.client().get("/metrics"), 404);
      expect(missing.json).toMatchObject({ status: 404, code: "NOT_FOUND" });
    } finally {
      await bare.close();
    }
  });
});
