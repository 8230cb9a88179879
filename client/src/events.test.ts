import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Cubicle } from "./cubicle.ts";

/** What the events endpoint does with the nth connection. */
type Connection = (request: IncomingMessage, response: ServerResponse) => void;

let connections: Connection[] = [];
const resumedFrom: (string | undefined)[] = [];
const server = createServer((request, response) => {
  resumedFrom.push(request.headers["last-event-id"] as string | undefined);
  const next = connections.shift();
  if (next) next(request, response);
  else response.writeHead(503).end();
});
let cubicle: Cubicle;

const sse = (response: ServerResponse, lines: string) => {
  response.writeHead(200, { "content-type": "text/event-stream" });
  response.write(lines);
};
const event = (id: string, type = "session.opened") =>
  `event: ${type}\nid: ${id}\ndata: ${JSON.stringify({ id, type, workspaceId: "w1" })}\n\n`;

beforeAll(async () => {
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  cubicle = new Cubicle({
    url: `http://127.0.0.1:${port}`,
    apiKey: "cub_test",
    workspaceId: "w1",
    retries: 0,
  });
});
afterAll(() => {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(resolve));
});

describe("following a workspace's events", () => {
  it("follows again from the last event after a drop and while the api is away, losing and repeating nothing", async () => {
    connections = [
      // ready, one event, then the connection drops
      (_request, response) => {
        sse(response, `event: ready\nid: p0\ndata: {}\n\n${event("p1")}`);
        setTimeout(() => response.socket?.destroy(), 50);
      },
      // the api restarting: refused twice
      (_request, response) => response.writeHead(502).end(),
      (request) => request.socket.destroy(),
      (_request, response) =>
        sse(response, `event: ready\nid: p1\ndata: {}\n\n${event("p2", "session.ended")}`),
    ];
    resumedFrom.length = 0;
    const abort = new AbortController();
    let readies = 0;
    const ids: string[] = [];
    for await (const e of cubicle.events({ signal: abort.signal, onReady: () => readies++ })) {
      ids.push(e.id);
      if (e.type === "session.ended") abort.abort();
    }
    expect(ids).toEqual(["p1", "p2"]);
    expect(readies).toBe(2);
    expect(resumedFrom).toEqual([undefined, "p1", "p1", "p1"]);
  }, 20_000);

  it("resumes from where a stream started when it dropped before any event", async () => {
    connections = [
      (_request, response) => {
        sse(response, "event: ready\nid: start\ndata: {}\n\n");
        setTimeout(() => response.socket?.destroy(), 50);
      },
      (_request, response) => sse(response, `event: ready\nid: start\ndata: {}\n\n${event("p9")}`),
    ];
    resumedFrom.length = 0;
    const abort = new AbortController();
    for await (const e of cubicle.events({ signal: abort.signal })) {
      expect(e.id).toBe("p9");
      abort.abort();
    }
    expect(resumedFrom).toEqual([undefined, "start"]);
  }, 20_000);

  it("ends at once when aborted while waiting to reconnect", async () => {
    connections = [];
    const abort = new AbortController();
    connections = [
      (_request, response) => {
        sse(response, "event: ready\nid: x\ndata: {}\n\n");
        setTimeout(() => response.socket?.destroy(), 10);
      },
    ];
    const started = Date.now();
    setTimeout(() => abort.abort(), 1_500);
    for await (const _ of cubicle.events({ signal: abort.signal })) throw new Error("no event was sent");
    expect(Date.now() - started).toBeLessThan(3_000);
  }, 20_000);

  it("throws a refusal, and an api it never reached", async () => {
    connections = [
      (_request, response) =>
        response
          .writeHead(404, { "content-type": "application/problem+json" })
          .end(JSON.stringify({ type: "t", title: "Not Found", status: 404, code: "WORKSPACE_NOT_FOUND" })),
    ];
    const refused = await (async () => {
      for await (const _ of cubicle.events()) return "an event";
    })().catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 404, code: "WORKSPACE_NOT_FOUND" });
    const nowhere = new Cubicle({
      url: "http://127.0.0.1:9",
      apiKey: "cub_test",
      workspaceId: "w1",
      retries: 0,
    });
    await expect(
      (async () => {
        for await (const _ of nowhere.events()) return "an event";
      })(),
    ).rejects.toThrow();
  });
});
