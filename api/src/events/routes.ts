import { ACTOR_TYPES } from "@cubicle/db";
import { z } from "@hono/zod-openapi";
import { defineRoute } from "../access/define-route.ts";
import { WorkspaceIdParam } from "../http/params.ts";
import { createRouter } from "../http/router.ts";
import { currentEpoch, resumeFrom } from "./epochs.ts";
import { EVENT_ACTIONS } from "./kinds.ts";
import { decodePosition } from "./position.ts";
import { streamEvents } from "./stream.ts";

const WorkspaceEventSchema = z
  .object({
    id: z
      .string()
      .openapi({ description: "The event's position, also its SSE `id`.", example: "0-7412-318" }),
    type: z.enum(EVENT_ACTIONS).openapi({ description: "The audit action, also the SSE `event` name." }),
    occurredAt: z.string().datetime(),
    workspaceId: z.string(),
    actor: z.object({ type: z.enum(ACTOR_TYPES), label: z.string().nullable() }),
    target: z.object({ type: z.string(), id: z.string() }).nullable(),
    data: z.record(z.string(), z.unknown()).openapi({ description: "The audit record's data." }),
  })
  .openapi("WorkspaceEvent");

const eventId = (description: string) =>
  z.string().optional().openapi({ description, example: "0-7412-318" });

const streamWorkspaceEvents = defineRoute(
  { kind: "workspace", minRole: "member" },
  {
    operationId: "streamWorkspaceEvents",
    method: "get",
    path: "/v1/workspaces/{workspaceId}/events",
    summary: "Follow the workspace's changes live (Server-Sent Events)",
    description: [
      "Computers' states, sessions opened and ended, control of screens, checkpoints: each as an SSE " +
        "event named by its audit action (`computer.started`, `session.opened`, `checkpoint.created`…) " +
        "whose data is a `WorkspaceEvent`, and whose `id` is its position in the stream.",
      "The stream opens with `ready` (data `{workspaceId}`, `id` the position it starts from), then " +
        "sends every event after that position, in the same order on every replica, and `: keep-alive` " +
        "comments while idle. Without an id it starts now; with one it resumes just after it, losing " +
        "and repeating nothing. EventSource does that by itself when it reconnects.",
      "Ids are opaque (`<epoch>-<xact>-<id>`). After the database was restored onto another server " +
        "a new epoch begins: an id from before it resumes at the restore (the `ready` id says so).",
    ].join("\n\n"),
    tags: ["Events"],
    request: {
      params: WorkspaceIdParam,
      query: z.object({
        lastEventId: eventId("Resume after this event, for clients that cannot send Last-Event-ID."),
      }),
      headers: z.object({
        "last-event-id": eventId(
          "Resume after this event; wins over `lastEventId`, which a reconnecting EventSource keeps sending unchanged in its URL.",
        ).openapi({ param: { name: "last-event-id", in: "header" } }),
      }),
    },
    responses: {
      200: {
        description: "The stream; each event's data is one `WorkspaceEvent`.",
        content: { "text/event-stream": { schema: WorkspaceEventSchema } },
      },
      400: {
        description:
          "The event id is not one this stream sent, or is of an epoch this database does not have (`INVALID_EVENT_ID`).",
      },
    },
  },
);

export function eventRoutes() {
  return createRouter().openapi(streamWorkspaceEvents, async (c) => {
    const resumeAfter = c.req.valid("header")["last-event-id"] ?? c.req.valid("query").lastEventId;
    // refused (400) before the stream starts: malformed, or of an epoch that does not exist
    const from =
      resumeAfter === undefined
        ? undefined
        : resumeFrom(decodePosition(resumeAfter), await currentEpoch(c.var.deps.database.db));
    return streamEvents(c, c.var.workspace.workspaceId, from);
  });
}
