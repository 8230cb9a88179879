import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ComputerBusyError, CubicleError, errorOf } from "./problem.ts";
import { transport } from "./transport.ts";

/** What the server does with the nth request of a test: answer, or drop the connection. */
type Script = (request: IncomingMessage, body: string, response: ServerResponse) => void;

let script: Script[] = [];
let seen: { path: string; method: string; body: string; apiKey: string | undefined }[] = [];
const server = createServer(async (request, response) => {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks).toString();
  seen.push({
    path: request.url ?? "",
    method: request.method ?? "",
    body,
    apiKey: request.headers["x-api-key"] as string | undefined,
  });
  const step = script[seen.length - 1] ?? answer(500);
  step(request, body, response);
});
let url = "";

const answer =
  (status: number, headers: Record<string, string> = {}): Script =>
  (_request, body, response) => {
    response.writeHead(status, headers).end(body);
  };
const drop: Script = (request) => request.socket.destroy();

beforeAll(async () => {
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/thing`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));
beforeEach(() => {
  script = [];
  seen = [];
});

const send = transport({ apiKey: "cub_test", retries: 3 });
const post = (body: BodyInit) => new Request(url, { method: "POST", body, duplex: "half" } as RequestInit);

describe("the client's transport", () => {
  it("sends the API key, and tries a read again after a transient answer or a dropped connection", async () => {
    script = [answer(503), drop, answer(502), answer(200)];
    const response = await send(new Request(url));
    expect(response.status).toBe(200);
    expect(seen.map((s) => s.apiKey)).toEqual(Array(4).fill("cub_test"));
  });

  it("gives up on a read after its retries, answering the last response", async () => {
    script = [answer(503), answer(503), answer(503), answer(503), answer(200)];
    expect((await send(new Request(url))).status).toBe(503);
    expect(seen).toHaveLength(4);
  });

  it("never sends a write twice unless the api said it did nothing (429 / 503 with Retry-After)", async () => {
    script = [answer(503)];
    expect((await send(post("once"))).status).toBe(503);
    expect(seen).toHaveLength(1);

    seen = [];
    script = [drop];
    await expect(send(post("once"))).rejects.toThrow();
    expect(seen).toHaveLength(1);

    seen = [];
    script = [answer(429, { "retry-after": "0" }), answer(503, { "retry-after": "0" }), answer(201)];
    expect((await send(post("the same body"))).status).toBe(201);
    expect(seen.map((s) => s.body)).toEqual(["the same body", "the same body", "the same body"]);
  });

  it("answers at once when Retry-After is past its limit, or the body is a stream sent once", async () => {
    script = [answer(429, { "retry-after": "3600" }), answer(200)];
    expect((await send(new Request(url))).status).toBe(429);
    expect(seen).toHaveLength(1);

    seen = [];
    script = [answer(429, { "retry-after": "0" }), answer(201)];
    const stream = new Blob(["streamed"]).stream();
    expect((await send(post(stream), { once: true })).status).toBe(429);
    expect(seen.map((s) => s.body)).toEqual(["streamed"]);
  });

  it("refuses to follow a redirect with the key (it would carry the key wherever it points)", async () => {
    const redirect = answer(302, { location: "/elsewhere" });
    script = [redirect, redirect, redirect, redirect, answer(200)];
    await expect(send(new Request(url))).rejects.toThrow();
    // every try (a refused redirect looks like the network failing) stopped at the redirect
    expect(seen.map((s) => s.path)).toEqual(Array(4).fill("/thing"));
  });

  it("stops trying when the caller aborts", async () => {
    script = [answer(503, { "retry-after": "5" }), answer(200)];
    const abort = new AbortController();
    const sent = send(new Request(url, { signal: abort.signal }));
    setTimeout(() => abort.abort(), 100);
    await expect(sent).rejects.toThrow();
    expect(seen).toHaveLength(1);
  });
});

describe("problems as errors", () => {
  const problem = (body: unknown, status = 409) =>
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/problem+json" } });

  it("keeps the api's code and detail, and names a busy bot's holder", async () => {
    const stale = await errorOf(
      problem({ type: "t", title: "Conflict", status: 409, code: "STALE_FENCE", detail: "stale" }),
    );
    expect(stale).toBeInstanceOf(CubicleError);
    expect(stale).toMatchObject({ status: 409, code: "STALE_FENCE", detail: "stale", message: "stale" });
    const holder = {
      type: "api_key",
      id: "k1",
      name: "robot",
      sessionId: "s1",
      expiresAt: new Date().toISOString(),
    };
    const busy = await errorOf(
      problem({ type: "t", title: "Conflict", status: 409, code: "COMPUTER_BUSY", holder }),
    );
    expect(busy).toBeInstanceOf(ComputerBusyError);
    expect((busy as ComputerBusyError).holder).toEqual(holder);
  });

  it("gives an answer that is not a problem the code HTTP_<status>", async () => {
    const error = await errorOf(
      new Response("<html>bad gateway</html>", { status: 502, statusText: "Bad Gateway" }),
    );
    expect(error).toMatchObject({ status: 502, code: "HTTP_502", detail: "Bad Gateway" });
  });
});
