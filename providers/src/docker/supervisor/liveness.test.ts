/**
 * The supervisor client against a real HTTP server that stops answering, as a stopped (SIGSTOP)
 * supervisor does: the kernel still takes its connections, nothing replies. Calls in flight, and
 * streams half read, fail as SUPERVISOR_UNREACHABLE instead of waiting; a call that is only slow,
 * from a supervisor that still answers, is left alone.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createSupervisorClient, SupervisorError } from "./client.ts";

const TIMING = { everyMs: 100, withinMs: 300 };
const ref = { homeKey: "h1", computerId: "c1", workspaceId: "w1" };

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((done) => server?.close(done));
  server = undefined;
});

/** A server whose /alive answers until `silent` is set, and whose other routes `route` answers. */
async function supervisorLike(route: (req: IncomingMessage, res: ServerResponse) => void) {
  const state = { silent: false };
  server = createServer((req, res) => {
    if (state.silent) return; // like a stopped process: the request is taken, never answered
    if (req.url === "/alive") {
      res.writeHead(204).end();
      return;
    }
    route(req, res);
  });
  await new Promise<void>((done) => server?.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  const client = createSupervisorClient({
    baseUrl: `http://127.0.0.1:${port}`,
    token: "t",
    liveness: TIMING,
  });
  return { client, state };
}

async function refusal(attempt: Promise<unknown>): Promise<SupervisorError> {
  const error = await attempt.then(
    () => new Error("the call succeeded"),
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(SupervisorError);
  return error as SupervisorError;
}

describe("calls to a supervisor that stops answering", () => {
  it("fail as SUPERVISOR_UNREACHABLE instead of waiting", async () => {
    const { client, state } = await supervisorLike(() => undefined);
    state.silent = true;
    const started = Date.now();
    const error = await refusal(client.list());
    expect(error.code).toBe("SUPERVISOR_UNREACHABLE");
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("fail a command's event stream that stops half way", async () => {
    const { client, state } = await supervisorLike((_req, res) => {
      res.writeHead(200, { "content-type": "application/x-ndjson" });
      res.write(`${JSON.stringify({ type: "stdout", data: "first\n" })}\n`);
      state.silent = true;
    });
    const seen: string[] = [];
    const reading = (async () => {
      for await (const event of client.exec(ref, { command: "sleep 60", timeoutMs: 60_000 }))
        if (event.type === "stdout") seen.push(event.data);
    })();
    expect((await refusal(reading)).code).toBe("SUPERVISOR_UNREACHABLE");
    expect(seen).toEqual(["first\n"]);
  });

  it("fail a home archive that stops half way", async () => {
    const { client, state } = await supervisorLike((_req, res) => {
      res.writeHead(200, { "content-type": "application/x-tar" });
      res.write(Buffer.alloc(512));
      state.silent = true;
    });
    const archive = await client.exportHome(ref);
    const reader = archive.getReader();
    const reading = (async () => {
      while (!(await reader.read()).done) {
        // read on until it fails
      }
    })();
    expect((await refusal(reading)).code).toBe("SUPERVISOR_UNREACHABLE");
  });

  it("leave a slow call alone while the supervisor answers", async () => {
    const { client } = await supervisorLike((_req, res) => {
      // many liveness periods: a computer that takes its time to boot, say
      setTimeout(
        () => res.writeHead(200, { "content-type": "application/json" }).end('{"computers":[]}'),
        1_500,
      );
    });
    await expect(client.list()).resolves.toEqual([]);
  });
});
