import { startTestApi, type TestApi } from "@cubicle/api/testing/harness";
import {
  type DocumentedRoute,
  documentedRoutes,
  type OpenApiDocument,
  openApiDocument,
  pathParams,
  requiredQuery,
  sampleOf,
} from "@cubicle/api/testing/openapi";
import { buildWorld, type World } from "@cubicle/api/testing/world";
import { afterAll, beforeAll, describe, it, type TestContext } from "vitest";
import { fill, furnish, type Objects } from "../../src/objects.ts";
import { type Answer, type Expectation, refusals } from "../../src/refusals.ts";
import { changedRows, type Expected, refusalRecorded, snapshotRows } from "../../src/rows.ts";
import { tally } from "../../src/tally.ts";

/**
 * Every route of the API's OpenAPI document, called by the owner of one workspace (as a person and
 * with an owner-role API key) with the ids of another workspace's objects put into paths that are
 * otherwise their own and valid: each must answer 404 problem JSON, as if the id did not exist,
 * and neither workspace may read any different afterwards. Ids of the wrong kind or shape too.
 */
const FAMILY = "hostile: authorization";
const ANSWER_WITHIN_MS = 10_000;

let t: TestApi;
let w: World;
/** The workspace whose ids are tried: the world's, owned by its owner. */
let victim: Objects;
/** The caller's own workspace, the outsider's, with an object of every kind. */
let attacker: Objects;
let doc: OpenApiDocument;
let routes: DocumentedRoute[];

beforeAll(async () => {
  t = await startTestApi();
  w = await buildWorld(t, "authz");
  victim = await furnish(t, w.people.owner, w.workspaceId);
  attacker = await furnish(t, w.people.outsider, w.otherWorkspaceId);
  doc = await openApiDocument(t.client());
  routes = documentedRoutes(doc).filter((route) => pathParams(route.path).length > 0);
});
afterAll(() => t?.close());

type Caller = "person" | "key";
const CALLERS: readonly Caller[] = ["person", "key"];

/** The ids a route can take that name an object; the screen index is a number, tried apart. */
const ID_KINDS = [
  "workspaceId",
  "memberId",
  "invitationId",
  "keyId",
  "credentialId",
  "botId",
  "computerId",
  "checkpointId",
  "leaseId",
  "sessionId",
] as const;
const isIdKind = (name: string) => (ID_KINDS as readonly string[]).includes(name);
let seq = 0;

/**
 * Calls as the attacker: the outsider signed in, or their workspace's owner-role key (API keys are
 * audited on every use, and refused from people-only routes after the workspace is checked), with
 * the fence of their own open session and a body the route's schema accepts, so that only the ids
 * decide the answer.
 */
async function send(caller: Caller, route: DocumentedRoute, path: string): Promise<Answer> {
  const schema = route.operation.requestBody?.content["application/json"]?.schema;
  const response = await w.people.outsider.fetch(route.method, path + requiredQuery(doc, route.operation), {
    ...(schema ? { body: new TextEncoder().encode(JSON.stringify(sampleOf(doc, schema))) } : {}),
    headers: {
      "x-session-fence": attacker.fence,
      ...(schema ? { "content-type": "application/json" } : {}),
      ...(caller === "key" ? { "x-api-key": attacker.apiKey } : {}),
    },
    signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
  });
  return {
    status: response.status,
    contentType: response.headers.get("content-type"),
    text: await response.text(),
  };
}

/** A key's use is audited whatever the answer, by design; the rest of a refusal leaves nothing. */
const keyUseRecorded: Expected = (key, before, after) =>
  refusalRecorded(key, before, after) ||
  (key.startsWith("audit_events/") &&
    before === undefined &&
    (after as { action?: string }).action === "api_key.used") ||
  (key.startsWith("apikey/") && before !== undefined && after !== undefined);

/**
 * Runs one case's requests, then proves both workspaces read the same: every row of every table,
 * but for the audit log's record of the requests themselves.
 */
async function sweep(context: TestContext, run: (check: ReturnType<typeof refusals>) => Promise<void>) {
  const count = tally(context, FAMILY);
  const check = refusals(count);
  const before = await snapshotRows(t.database.db);
  await run(check);
  count.lost(changedRows(before, await snapshotRows(t.database.db), keyUseRecorded));
  check.expectAllRefused();
}

/** Sends and checks one request; a request with no answer in time is a failure of its own. */
async function attempt(
  check: ReturnType<typeof refusals>,
  what: string,
  caller: Caller,
  route: DocumentedRoute,
  path: string,
  expected: Expectation,
) {
  try {
    const answer = await send(caller, route, path);
    const leaked = leakedIds(answer.text);
    check.check(`${route.method} ${route.path} as ${caller} ${what}`, answer, expected);
    if (leaked.length > 0)
      check.unanswered(`${route.method} ${route.path} as ${caller} ${what}`, `told ${leaked}`);
  } catch (error) {
    check.unanswered(`${route.method} ${route.path} as ${caller} ${what}`, error);
  }
}

/** The victim's ids an answer names, beyond the path it echoes back as the problem's instance. */
function leakedIds(text: string): string[] {
  let body: unknown = text;
  try {
    const { instance: _echo, ...rest } = JSON.parse(text);
    body = rest;
  } catch {
    // Not JSON: searched as it is.
  }
  const searched = JSON.stringify(body);
  return ID_KINDS.map((kind) => victim[kind] ?? "").filter((id) => id !== "" && searched.includes(id));
}

const NOT_FOUND: Expectation = { status: [404] };

/**
 * What a key is told about another workspace's id in its own workspace's path: 404, or else
 * exactly what it is told for an id that exists nowhere (a people-only route refuses every key with
 * 403 before reading any id), so that the answer says nothing about the other workspace.
 */
async function asForNoSuchId(route: DocumentedRoute, name: string): Promise<Expectation> {
  const control = await send("key", route, fill(route.path, { ...attacker, [name]: `no-such-${name}` }));
  if (control.status === 404) return NOT_FOUND;
  const code = (JSON.parse(control.text) as { code?: string }).code;
  return { status: [control.status], ...(code ? { code } : {}) };
}
const NOT_FOUND_OR_INVALID: Expectation = { status: [400, 404] };

describe("another workspace's ids at every route", () => {
  for (const caller of CALLERS) {
    it(`answer 404 to its owner as a ${caller}, one id at a time in paths of their own, and all at once`, async (context) => {
      await sweep(context, async (check) => {
        for (const route of routes) {
          const names = pathParams(route.path).filter(isIdKind);
          for (const name of names)
            await attempt(
              check,
              `with the other workspace's {${name}}`,
              caller,
              route,
              fill(route.path, { ...attacker, [name]: victim[name] ?? "" }),
              caller === "person" ? NOT_FOUND : await asForNoSuchId(route, name),
            );
          // Without a workspace in the path, a people-only route refuses a key before any id.
          const whole =
            caller === "key" && !names.includes("workspaceId")
              ? await asForNoSuchId(route, names[0] ?? "")
              : NOT_FOUND;
          await attempt(
            check,
            "with the other workspace's path",
            caller,
            route,
            fill(route.path, victim),
            whole,
          );
        }
      });
    });
  }

  it("answer 404 to ids of the wrong kind, and 400 or 404 to ids of the wrong shape", async (context) => {
    const wrongShapes = ["not-an-id", "../..", "' OR '1'='1", "x".repeat(64), "ünïcødé %"];
    const wrongIndexes = ["-1", "abc", "1.5", "99999999999999999999", "0x1", " 0"];
    await sweep(context, async (check) => {
      for (const route of routes) {
        for (const name of pathParams(route.path)) {
          if (name === "index") {
            for (const index of wrongIndexes)
              await attempt(
                check,
                `with screen ${JSON.stringify(index)}`,
                "person",
                route,
                fill(route.path, { ...attacker, index }),
                NOT_FOUND_OR_INVALID,
              );
            continue;
          }
          // Three other kinds of the caller's own ids (real, visible to them), in turn per parameter.
          const others = ID_KINDS.filter((other) => other !== name);
          seq += 3;
          const start = seq;
          for (const kind of [0, 1, 2].map((i) => others[(start + i) % others.length] ?? "workspaceId"))
            await attempt(
              check,
              `with a ${kind} as {${name}}`,
              "person",
              route,
              fill(route.path, { ...attacker, [name]: attacker[kind] ?? "" }),
              NOT_FOUND,
            );
          for (const shape of wrongShapes)
            await attempt(
              check,
              `with ${JSON.stringify(shape)} as {${name}}`,
              "person",
              route,
              fill(route.path, { ...attacker, [name]: shape }),
              NOT_FOUND_OR_INVALID,
            );
        }
      }
    });
  });
});
