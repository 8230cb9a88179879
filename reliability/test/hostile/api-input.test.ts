import { bodyText, expectStatus, startTestApi, type TestApi } from "@cubicle/api/testing/harness";
import {
  type DocumentedRoute,
  documentedRoutes,
  type JsonSchema,
  type OpenApiDocument,
  openApiDocument,
  resolve,
  sampleOf,
} from "@cubicle/api/testing/openapi";
import { buildWorld, type World } from "@cubicle/api/testing/world";
import { afterAll, beforeAll, describe, it, type TestContext } from "vitest";
import { fill, furnish, type Objects } from "../../src/objects.ts";
import { rawRequest } from "../../src/raw-http.ts";
import { type Answer, type Expectation, refusals } from "../../src/refusals.ts";
import { changedRows, refusalRecorded, snapshotRows } from "../../src/rows.ts";
import { tally } from "../../src/tally.ts";

/**
 * Hostile bodies, parameters and headers at every route of the API's own OpenAPI document, sent as
 * the workspace's owner (also the deployment's) with real ids, so that only the input stands
 * between each request and a change: every one must be refused with a clear 4xx problem, and the
 * database must read the same afterwards.
 */
const FAMILY = "hostile: api input";
/** Past this a request counts as a hang. */
const ANSWER_WITHIN_MS = 10_000;
/** Past the API's JSON body limit (1 MiB), under Node's memory for a test. */
const HUGE_BYTES = 2 * 1024 * 1024;
/** Deeper than any schema goes, and than a recursive walk of it would survive. */
const NESTING = 100_000;
const SAMPLE_FILE = "sample.txt";

let t: TestApi;
let w: World;
let objects: Objects;
/** Another workspace's, for a valid key of each in two headers: neither may be chosen. */
let other: Objects;
let doc: OpenApiDocument;
let routes: DocumentedRoute[];

beforeAll(async () => {
  t = await startTestApi();
  w = await buildWorld(t, "api-input");
  objects = await furnish(t, w.people.owner, w.workspaceId);
  other = await furnish(t, w.people.outsider, w.otherWorkspaceId);
  // A file on both computers, for the file routes' own reading.
  const team = `/v1/workspaces/${w.workspaceId}/bots/${objects.botId}/sessions/${objects.sessionId}`;
  const computer = `/v1/workspaces/${w.workspaceId}/computers/${objects.computerId}`;
  for (const where of [team, computer])
    expectStatus(
      await w.people.owner.put(`${where}/files/content?path=${SAMPLE_FILE}`, "sample", {
        headers: { "content-type": "application/octet-stream", "x-session-fence": objects.fence },
      }),
      204,
    );
  doc = await openApiDocument(t.client());
  routes = documentedRoutes(doc);
  await expectReachable();
});
afterAll(() => t?.close());

/** Every GET with the suite's ids answers the owner: else a refusal below might be a wrong id's. */
async function expectReachable() {
  const gets = routes.filter((route) => route.method === "GET" && !route.path.startsWith("/metrics"));
  for (const route of gets) {
    const query = route.operation.parameters?.some((p) => p.in === "query" && p.required)
      ? `?path=${SAMPLE_FILE}`
      : "";
    const answer = await asOwner(route, fill(route.path, objects) + query);
    if (answer.status !== 200) throw new Error(`${label(route, "")}: ${answer.status} ${answer.text}`);
  }
  if (gets.length < 10) throw new Error(`only ${gets.length} GET routes in the document`);
}

const label = (route: DocumentedRoute, what: string) => `${route.method} ${route.path} ${what}`;
const jsonSchemaOf = (route: DocumentedRoute) =>
  route.operation.requestBody?.content["application/json"]?.schema;

/** Sends as the owner: cookie, trusted origin, and the open session's fence for session routes. */
async function asOwner(
  route: DocumentedRoute,
  path: string,
  body?: Uint8Array,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const response = await w.people.owner.fetch(route.method, path, {
    ...(body ? { body } : {}),
    headers: { "x-session-fence": objects.fence, ...headers },
    signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
  });
  return {
    status: response.status,
    contentType: response.headers.get("content-type"),
    // an event stream does not end: its first event says enough
    text: await bodyText(response),
  };
}

/**
 * Runs one case's hostile requests and proves they changed nothing: every row of every table reads
 * the same afterwards, but for the audit log's record of a refused key, sign-up or sign-in.
 */
async function sweep(context: TestContext, send: (check: ReturnType<typeof refusals>) => Promise<void>) {
  const count = tally(context, FAMILY);
  const check = refusals(count);
  const before = await snapshotRows(t.database.db);
  await send(check);
  const after = await snapshotRows(t.database.db);
  count.lost(changedRows(before, after, refusalRecorded));
  check.expectAllRefused();
}

async function attempt(
  check: ReturnType<typeof refusals>,
  what: string,
  send: () => Promise<Answer>,
  expected?: Expectation,
) {
  try {
    check.check(what, await send(), expected);
  } catch (error) {
    check.unanswered(what, error);
  }
}

const utf8 = (text: string) => new TextEncoder().encode(text);
const json = (value: unknown) => utf8(JSON.stringify(value));

/** A value of another JSON type than the schema's (or outside its enumeration). */
function wrongTypeFor(doc: OpenApiDocument, given: JsonSchema): unknown {
  const schema = resolve(doc, given);
  if (schema.enum) return "none-of-the-choices";
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  return type === "string" ? 12345 : type === "array" ? { not: "a list" } : type === "object" ? [1] : "text";
}

/** The sample body with every string in it (or one added field, where it has none) set to `text`. */
function withText(sample: unknown, text: string): unknown {
  let replaced = false;
  const walk = (value: unknown): unknown => {
    if (typeof value === "string") {
      replaced = true;
      return text;
    }
    if (Array.isArray(value)) return value.map(walk);
    if (value !== null && typeof value === "object")
      return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, walk(item)]));
    return value;
  };
  const result = walk(sample);
  return replaced ? result : { ...(result as object), note: text };
}

const INVALID_TEXT: Expectation = { status: [400], code: "INVALID_TEXT" };

describe("hostile API input at every documented route", () => {
  it("refuses malformed, wrong-typed, deeply nested, huge and mislabelled JSON bodies", async (context) => {
    await sweep(context, async (check) => {
      for (const route of routes) {
        const schema = jsonSchemaOf(route);
        if (!schema) continue;
        const path = fill(route.path, objects);
        const sample = sampleOf(doc, schema) as Record<string, unknown>;
        const properties = Object.entries(resolve(doc, schema).properties ?? {});
        const first = properties[0]?.[0] ?? "field";
        const bodies: [string, Uint8Array, Expectation?][] = [
          ["malformed JSON", utf8('{"name": "unfinished')],
          ["empty body", new Uint8Array()],
          ...[[], "text", 42, null, true].map(
            (value) => [`top-level ${JSON.stringify(value)}`, json(value)] as [string, Uint8Array],
          ),
          ...properties.map(
            ([name, property]) =>
              [`${name} of the wrong type`, json({ ...sample, [name]: wrongTypeFor(doc, property) })] as [
                string,
                Uint8Array,
              ],
          ),
          [
            `${first} nested ${NESTING} deep`,
            utf8(`{"${first}":${"[".repeat(NESTING)}${"]".repeat(NESTING)}}`),
          ],
          [
            `${first} of ${HUGE_BYTES} bytes`,
            json({ ...sample, [first]: "x".repeat(HUGE_BYTES) }),
            { status: [413], code: "BODY_TOO_LARGE" },
          ],
        ];
        for (const [what, body, expected] of bodies)
          await attempt(
            check,
            label(route, what),
            () => asOwner(route, path, body, { "content-type": "application/json" }),
            expected,
          );
        await attempt(check, label(route, "sent as text/plain"), () =>
          asOwner(route, path, json(sample), { "content-type": "text/plain" }),
        );
      }
    });
  });

  it("refuses invalid UTF-8, NUL and unpaired surrogates in an otherwise well-formed body", async (context) => {
    await sweep(context, async (check) => {
      for (const route of routes) {
        const schema = jsonSchemaOf(route);
        if (!schema) continue;
        const path = fill(route.path, objects);
        const sample = sampleOf(doc, schema);
        const marker = "\u2603MARK\u2603";
        const template = JSON.stringify(withText(sample, marker));
        const [head = "", tail = ""] = template.split(marker);
        const invalidUtf8 = new Uint8Array([...utf8(`${head}bad`), 0xff, 0xfe, 0xc3, ...utf8(tail)]);
        const bodies: [string, Uint8Array][] = [
          ["with bytes that are not UTF-8", invalidUtf8],
          ["with a NUL character", json(withText(sample, "before\u0000after"))],
          ["with an unpaired surrogate", utf8(template.replaceAll(marker, "\\ud800lone"))],
        ];
        for (const [what, body] of bodies)
          await attempt(
            check,
            label(route, what),
            () => asOwner(route, path, body, { "content-type": "application/json" }),
            INVALID_TEXT,
          );
      }
    });
  });

  it("refuses NUL and wrongly typed values in path and query parameters", async (context) => {
    await sweep(context, async (check) => {
      for (const route of routes) {
        const parameters = route.operation.parameters ?? [];
        for (const param of parameters.filter((p) => p.in === "path"))
          await attempt(
            check,
            label(route, `with NUL in {${param.name}}`),
            () =>
              asOwner(route, fill(route.path, { ...objects, [param.name]: `${objects[param.name]}\u0000` })),
            INVALID_TEXT,
          );
        const path = fill(route.path, objects);
        for (const param of parameters.filter((p) => p.in === "query")) {
          await attempt(
            check,
            label(route, `with NUL in ?${param.name}`),
            () => asOwner(route, `${path}?${param.name}=%00`),
            INVALID_TEXT,
          );
          const schema = resolve(doc, param.schema ?? {});
          const typed =
            schema.enum || schema.format || ["integer", "number", "boolean"].includes(String(schema.type));
          if (typed)
            await attempt(check, label(route, `with ?${param.name} of the wrong type`), () =>
              asOwner(route, `${path}?${param.name}=${encodeURIComponent("not one of those {}")}`),
            );
        }
      }
    });
  });

  it("refuses oversized headers and conflicting Content-Length before the app, as problem JSON too", async (context) => {
    await sweep(context, async (check) => {
      for (const route of routes) {
        const path = fill(route.path, objects);
        const send = (headers: [string, string][], body?: Buffer) => async (): Promise<Answer> => {
          const answer = await rawRequest(t.api.url, route.method, path, headers, body, ANSWER_WITHIN_MS);
          return {
            status: answer.status,
            contentType: answer.headers.get("content-type"),
            text: answer.body,
          };
        };
        await attempt(check, label(route, "with a 64 KiB header"), send([["X-Filler", "f".repeat(65_536)]]), {
          status: [431],
        });
        await attempt(
          check,
          label(route, "with two different Content-Lengths"),
          send(
            [
              ["Content-Type", "application/json"],
              ["Content-Length", "2"],
              ["Content-Length", "3"],
            ],
            Buffer.from("{}"),
          ),
          { status: [400] },
        );
      }
    });
  });

  it("refuses an API key given twice, or one that is huge, at every route that takes a key", async (context) => {
    await sweep(context, async (check) => {
      for (const route of routes.filter((r) => r.operation.security?.length)) {
        const path = fill(route.path, objects);
        const send = (headers: [string, string][]) => async (): Promise<Answer> => {
          const answer = await rawRequest(
            t.api.url,
            route.method,
            path,
            headers,
            undefined,
            ANSWER_WITHIN_MS,
          );
          return {
            status: answer.status,
            contentType: answer.headers.get("content-type"),
            text: answer.body,
          };
        };
        const fence: [string, string] = ["X-Session-Fence", objects.fence];
        await attempt(
          check,
          label(route, "with two X-Api-Key headers"),
          send([["X-Api-Key", objects.apiKey], ["X-Api-Key", other.apiKey], fence]),
          { status: [401] },
        );
        await attempt(
          check,
          label(route, "with a 12 KiB X-Api-Key"),
          send([["X-Api-Key", `${objects.apiKey}${"k".repeat(12_288)}`], fence]),
          { status: [401] },
        );
      }
    });
  });
});
