import { z } from "@hono/zod-openapi";
import { iso, isoOrNull } from "../http/iso.ts";
import { pathParam } from "../http/openapi.ts";
import { WorkspaceIdParam } from "../http/params.ts";
import type { SessionView } from "./leases.ts";

/** The one way a session's fence travels, on every write of the session and every tool call. */
export const FENCE_HEADER = "X-Session-Fence";

export const FENCE_DESCRIPTION =
  `Send the session's fence (returned when it opened) in the \`${FENCE_HEADER}\` header. ` +
  "A fence that is not the bot's current session's — the session ended or expired, or a newer " +
  "session holds the bot — is refused with 409 `STALE_FENCE`, and nothing happens.";

export const BotParams = WorkspaceIdParam.extend({ botId: pathParam("botId") });
export const SessionParams = BotParams.extend({ sessionId: pathParam("sessionId") });

/** Hono reads header names in lower case; the document shows the canonical spelling's meaning. */
export const FenceHeaders = z.object({
  "x-session-fence": z
    .string()
    .regex(/^\d{1,15}$/, "the session's fence: a whole number")
    .transform(Number)
    .openapi({
      param: { name: "x-session-fence", in: "header" },
      description: `The session's fence (${FENCE_HEADER}).`,
      example: "42",
    }),
});

export const SessionSchema = z
  .object({
    sessionId: z.string(),
    botId: z.string(),
    computerId: z.string(),
    fence: z
      .number()
      .int()
      .openapi({ description: `Send it as ${FENCE_HEADER} with every write and tool call.` }),
    status: z.enum(["open", "ended", "expired"]),
    outcome: z.enum(["success", "failure"]).nullable(),
    screen: z
      .number()
      .int()
      .nullable()
      .openapi({
        description:
          "The session's screen index (display `:screen+1` on a Docker computer), or null when no screen " +
          "was free: then graphical tools answer 409 `MULTI_SCREEN_UNAVAILABLE`; shell and files work.",
      }),
    holder: z.object({ type: z.enum(["user", "api_key"]), id: z.string(), name: z.string().nullable() }),
    expiresAt: z.string().datetime(),
    heartbeatAt: z.string().datetime(),
    createdAt: z.string().datetime(),
    endedAt: z.string().datetime().nullable(),
  })
  .openapi("Session");

export const sessionBody = (session: SessionView): z.infer<typeof SessionSchema> => ({
  sessionId: session.id,
  botId: session.bot_id,
  computerId: session.computer_id,
  fence: session.fence,
  status: session.effective_status,
  outcome: session.outcome,
  screen: session.screen_index,
  holder: { type: session.holder_type, id: session.holder_id, name: session.holder_name },
  expiresAt: iso(session.expires_at),
  heartbeatAt: iso(session.heartbeat_at),
  createdAt: iso(session.created_at),
  endedAt: isoOrNull(session.ended_at),
});
