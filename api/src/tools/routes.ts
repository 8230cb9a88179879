import { APP_NAMES, type LaunchRequest, MAX_ACTIONS_PER_BATCH } from "@cubicle/providers/contract";
import { validateActions } from "@cubicle/providers/kernel";
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { defineRoute } from "../access/define-route.ts";
import type { AppEnv } from "../context.ts";
import { readBody } from "../http/body.ts";
import { binaryResponse, jsonResponse as json } from "../http/openapi.ts";
import { createRouter } from "../http/router.ts";
import { FENCE_DESCRIPTION, FenceHeaders, SessionParams } from "../sessions/schemas.ts";
import { attachment, folderArchive, MAX_FILE_BYTES, MAX_UPLOAD_BYTES, unpackInto } from "./files.ts";
import {
  FileListSchema,
  PathQuery,
  RawBody,
  SHELL_STREAM_DESCRIPTION,
  ShellEvents,
  ShellRequestSchema,
  WriteQuery,
} from "./schemas.ts";
import { launch, screenOf, toolSession } from "./session.ts";
import { shellResponse } from "./shell.ts";

const SESSION_PATH = "/v1/workspaces/{workspaceId}/bots/{botId}/sessions/{sessionId}";

const PATHS_DESCRIPTION =
  "On a Team Computer a relative path starts in the bot's folder `bots/<bot id>/`, while `shared/…` and " +
  "`bots/…` name the team home's own folders (they organise work; they are not security boundaries). " +
  "On a Private Computer paths are relative to the bot's home. Absolute paths, `..` that climbs out of " +
  "the home and symlinks that lead out of it are refused (400 `PATH_OUTSIDE_HOME`).";

const ACCESS_NOTE = `Only the session's holder may call it, while the session is open. ${FENCE_DESCRIPTION}`;

const describe = (...parts: string[]) => [...parts, ACCESS_NOTE].join(" ");

const ActResultSchema = z
  .object({
    completed: z.number().int().openapi({ description: "Actions that ran to completion, in order." }),
    total: z.number().int(),
    error: z.string().optional(),
  })
  .openapi("ActResult");

const StartedSchema = z
  .object({ screen: z.number().int(), display: z.string().nullable() })
  .openapi("AppStarted");

const GRAPHICAL_409 = {
  description:
    "The session has no screen (`MULTI_SCREEN_UNAVAILABLE`), the computer has none (`GRAPHICAL_UNAVAILABLE`), " +
    "or the fence is stale (`STALE_FENCE`)",
};
const STALE_409 = { description: "The fence is stale (`STALE_FENCE`), or the computer is not running" };

const MEMBER = { kind: "workspace", minRole: "member" } as const;
const tags = ["Session tools"];

const observe = defineRoute(MEMBER, {
  tags,
  operationId: "observeSessionScreen",
  method: "post",
  path: `${SESSION_PATH}/observe`,
  summary: "Screenshot of the session's screen",
  description: describe(
    "Answers the PNG itself (`image/png`), with the screen's size in `X-Width`/`X-Height`, the pointer in " +
      "`X-Cursor-X`/`X-Cursor-Y`, the active window's title percent-encoded in `X-Active-Window` (absent " +
      "when none) and the screen index in `X-Screen`.",
  ),
  request: { params: SessionParams, headers: FenceHeaders },
  responses: {
    200: {
      ...binaryResponse("The screenshot", "image/png"),
      headers: z.object({
        "X-Width": z.string(),
        "X-Height": z.string(),
        "X-Cursor-X": z.string(),
        "X-Cursor-Y": z.string(),
        "X-Active-Window": z.string().optional(),
        "X-Screen": z.string(),
      }),
    },
    409: GRAPHICAL_409,
  },
});

const act = defineRoute(MEMBER, {
  tags,
  operationId: "actOnSessionScreen",
  method: "post",
  path: `${SESSION_PATH}/act`,
  summary: "Input actions on the session's screen, in order",
  description: describe(
    `Up to ${MAX_ACTIONS_PER_BATCH} actions (click, double_click, right_click, middle_click, move, mouse_down, ` +
      "mouse_up, drag, type, key, scroll, wait). The whole batch is checked first: a bad one runs nothing " +
      "(400 `INVALID_ACTIONS`).",
  ),
  request: {
    params: SessionParams,
    headers: FenceHeaders,
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z
            .object({
              actions: z.array(z.record(z.string(), z.unknown())).openapi({
                example: [
                  { type: "click", x: 640, y: 400 },
                  { type: "type", text: "hello" },
                ],
              }),
            })
            .openapi("ActRequest"),
        },
      },
    },
  },
  responses: { 200: json("Ran (see `completed` when one failed)", ActResultSchema), 409: GRAPHICAL_409 },
});

const openPath = defineRoute(MEMBER, {
  tags,
  operationId: "openSessionPath",
  method: "post",
  path: `${SESSION_PATH}/open-path`,
  summary: "Open a file or folder on the session's screen",
  description: describe(
    "A folder opens in a terminal started in it, a file in the browser. The app starts detached and " +
      `appears shortly after the answer. ${PATHS_DESCRIPTION}`,
  ),
  request: {
    params: SessionParams,
    headers: FenceHeaders,
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z.object({ path: z.string().max(4_096) }).openapi("OpenPathRequest"),
        },
      },
    },
  },
  responses: {
    202: json("Started", StartedSchema),
    409: GRAPHICAL_409,
    502: { description: "The computer could not start the app (`APP_LAUNCH_FAILED`)" },
  },
});

const launchApp = defineRoute(MEMBER, {
  tags,
  operationId: "launchSessionApp",
  method: "post",
  path: `${SESSION_PATH}/launch-app`,
  summary: "Start an app on the session's screen",
  description: describe(
    `Apps: ${APP_NAMES.join(", ")}. \`url\` opens in the browser. On a Team Computer the browser ` +
      "uses the bot's own profile (`bots/<bot id>/.browser-profiles/chromium`). The app starts detached.",
  ),
  request: {
    params: SessionParams,
    headers: FenceHeaders,
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z
            .object({
              app: z.enum(APP_NAMES),
              url: z
                .string()
                .url()
                .max(8_192)
                .refine((url) => /^https?:/i.test(url), "an http(s) URL")
                .optional(),
            })
            .openapi("LaunchAppRequest"),
        },
      },
    },
  },
  responses: {
    202: json("Started", StartedSchema),
    409: GRAPHICAL_409,
    502: { description: "The computer could not start the app (`APP_LAUNCH_FAILED`)" },
  },
});

const shell = defineRoute(MEMBER, {
  tags,
  operationId: "runSessionShell",
  method: "post",
  path: `${SESSION_PATH}/shell`,
  summary: "Run a command, streaming its output",
  description: describe(
    `${SHELL_STREAM_DESCRIPTION} It sees \`DISPLAY\` of the session's screen (when it has one). A long ` +
      `command does not keep the session alive: heartbeat meanwhile. ${PATHS_DESCRIPTION}`,
  ),
  request: {
    params: SessionParams,
    headers: FenceHeaders,
    body: { required: true, content: { "application/json": { schema: ShellRequestSchema } } },
  },
  responses: { 200: ShellEvents, 409: STALE_409 },
});

const listFiles = defineRoute(MEMBER, {
  tags,
  operationId: "listSessionFiles",
  method: "get",
  path: `${SESSION_PATH}/files`,
  summary: "List a folder",
  description: describe(PATHS_DESCRIPTION),
  request: { params: SessionParams, headers: FenceHeaders, query: PathQuery(false) },
  responses: {
    200: json("The folder's entries, sorted by name", FileListSchema),
    409: STALE_409,
  },
});

const deleteFile = defineRoute(MEMBER, {
  tags,
  operationId: "deleteSessionFile",
  method: "delete",
  path: `${SESSION_PATH}/files`,
  summary: "Delete a file, link or folder (recursively)",
  description: describe(PATHS_DESCRIPTION),
  request: { params: SessionParams, headers: FenceHeaders, query: PathQuery(true) },
  responses: { 204: { description: "Deleted" }, 409: STALE_409 },
});

const readFile = defineRoute(MEMBER, {
  tags,
  operationId: "readSessionFile",
  method: "get",
  path: `${SESSION_PATH}/files/content`,
  summary: "Read a file",
  description: describe(
    `The bytes as \`application/octet-stream\`; a file over ${MAX_FILE_BYTES} bytes is refused (413 ` +
      `\`FILE_TOO_LARGE\`; download its folder as an archive instead). ${PATHS_DESCRIPTION}`,
  ),
  request: { params: SessionParams, headers: FenceHeaders, query: PathQuery(true) },
  responses: {
    200: binaryResponse("The file"),
    409: STALE_409,
    413: { description: "The file is too large" },
  },
});

const writeFile = defineRoute(MEMBER, {
  tags,
  operationId: "writeSessionFile",
  method: "put",
  path: `${SESSION_PATH}/files/content`,
  summary: "Write a file",
  description: describe(
    `The raw request body (any content type, at most ${MAX_FILE_BYTES} bytes) becomes the file's ` +
      `contents; missing folders are made. \`executable=true\` sets mode 0755. ${PATHS_DESCRIPTION}`,
  ),
  request: {
    params: SessionParams,
    headers: FenceHeaders,
    query: WriteQuery,
    body: RawBody,
  },
  responses: {
    204: { description: "Written" },
    409: STALE_409,
    413: { description: "The body is too large" },
    507: { description: "The computer's disk is full (DISK_FULL): delete files in it and try again" },
  },
});

const downloadFolder = defineRoute(MEMBER, {
  tags,
  operationId: "downloadSessionFolder",
  method: "get",
  path: `${SESSION_PATH}/files/archive`,
  summary: "Download a folder as a tar archive",
  description: describe(`Names in the archive are relative to the folder. ${PATHS_DESCRIPTION}`),
  request: { params: SessionParams, headers: FenceHeaders, query: PathQuery(false) },
  responses: { 200: binaryResponse("The folder", "application/x-tar"), 409: STALE_409 },
});

const uploadFolder = defineRoute(MEMBER, {
  tags,
  operationId: "uploadSessionFolder",
  method: "post",
  path: `${SESSION_PATH}/files/archive`,
  summary: "Upload a tar archive into a folder",
  description: describe(
    `The body is a tar (at most ${MAX_UPLOAD_BYTES} bytes, files of at most ${MAX_FILE_BYTES}); its files ` +
      "are written under the folder, each under the same path rules (links are skipped). The whole " +
      "archive is checked before anything is written, so a refused one (a member outside the home, too " +
      "large, a broken archive) changes nothing; only a write the computer itself refuses (a folder " +
      `in the home that links out of it) stops an upload part way. ${PATHS_DESCRIPTION}`,
  ),
  request: {
    params: SessionParams,
    headers: FenceHeaders,
    query: PathQuery(false),
    body: {
      required: true,
      content: { "application/x-tar": { schema: z.string().openapi({ format: "binary" }) } },
    },
  },
  responses: {
    200: json(
      "Written",
      z
        .object({ files: z.number().int(), bytes: z.number().int(), skipped: z.number().int() })
        .openapi("Upload"),
    ),
    409: STALE_409,
    413: { description: "The archive is too large" },
  },
});

/** The session named by the route, checked for the caller and fence (see toolSession). */
function sessionOf(c: Context<AppEnv>) {
  const fence = Number(c.req.header("x-session-fence"));
  return toolSession(
    c,
    { botId: c.req.param("botId") ?? "", sessionId: c.req.param("sessionId") ?? "" },
    fence,
  );
}

export function toolRoutes() {
  return createRouter()
    .openapi(observe, async (c) => {
      const session = await sessionOf(c);
      const screen = screenOf(session);
      const shot = await session.use(() => session.machine.provider.observe(session.machine.ref, screen));
      return c.body(new Uint8Array(shot.png), 200, {
        "content-type": "image/png",
        "cache-control": "no-store",
        "x-width": String(shot.width),
        "x-height": String(shot.height),
        "x-cursor-x": String(shot.cursor.x),
        "x-cursor-y": String(shot.cursor.y),
        "x-screen": String(screen),
        ...(shot.activeWindow === null ? {} : { "x-active-window": encodeURIComponent(shot.activeWindow) }),
      });
    })
    .openapi(act, async (c) => {
      const session = await sessionOf(c);
      const screen = screenOf(session);
      const actions = validateActions(c.req.valid("json").actions);
      const result = await session.use(() =>
        session.machine.provider.act(session.machine.ref, screen, actions),
      );
      await session.audit("session.acted", {
        screen,
        actions: actions.map((action) => action.type),
        completed: result.completed,
      });
      return c.json(result, 200);
    })
    .openapi(openPath, async (c) => {
      const session = await sessionOf(c);
      const screen = screenOf(session);
      const path = session.paths.resolve(c.req.valid("json").path);
      const launched = await launch(session, screen, { kind: "path", path });
      await session.audit("session.path_opened", { path, screen, with: launched.app });
      return c.json({ screen, display: launched.display }, 202);
    })
    .openapi(launchApp, async (c) => {
      const session = await sessionOf(c);
      const screen = screenOf(session);
      const { app, url } = c.req.valid("json");
      const request: LaunchRequest = app === "browser" && url ? { kind: "url", url } : { kind: "app", app };
      const launched = await launch(session, screen, request);
      await session.audit("session.app_launched", { app, screen, ...(url ? { url } : {}) });
      return c.json({ screen, display: launched.display }, 202);
    })
    .openapi(shell, async (c) => {
      const session = await sessionOf(c);
      const body = c.req.valid("json");
      // Graphical programs the command starts land on the session's own screen.
      const screen = session.session.screen_index;
      const { provider } = session.machine;
      const display =
        screen !== null && provider.capabilities.graphical ? (provider.screenEnv(screen) ?? {}) : {};
      return shellResponse(c, body, {
        cwd: body.cwd === undefined ? session.paths.start : session.paths.resolve(body.cwd),
        env: display,
        audit: (data) => session.audit("session.shell", data),
        use: (work) => session.use(() => work(session.machine)),
      });
    })
    .openapi(listFiles, async (c) => {
      const session = await sessionOf(c);
      const path = session.paths.resolve(c.req.valid("query").path);
      const items = await session.use(() => session.machine.provider.listFiles(session.machine.ref, path));
      return c.json({ path, items }, 200);
    })
    .openapi(deleteFile, async (c) => {
      const session = await sessionOf(c);
      const path = session.paths.resolve(c.req.valid("query").path);
      await session.use(() => session.machine.provider.deleteFile(session.machine.ref, path));
      await session.audit("session.file_deleted", { path });
      return c.body(null, 204);
    })
    .openapi(readFile, async (c) => {
      const session = await sessionOf(c);
      const path = session.paths.resolve(c.req.valid("query").path);
      const data = await session.use(() =>
        session.machine.provider.readFile(session.machine.ref, path, { maxBytes: MAX_FILE_BYTES }),
      );
      return c.body(new Uint8Array(data), 200, {
        "content-type": "application/octet-stream",
        "cache-control": "no-store",
      });
    })
    .openapi(writeFile, async (c) => {
      const session = await sessionOf(c);
      const { path: asked, executable } = c.req.valid("query");
      const path = session.paths.resolve(asked);
      const data = await readBody(c.req.raw, MAX_FILE_BYTES, "The file");
      await session.use(() =>
        session.machine.provider.writeFile(session.machine.ref, path, data, {
          executable: executable === "true",
        }),
      );
      await session.audit("session.file_written", {
        path,
        bytes: data.byteLength,
        executable: executable === "true",
      });
      return c.body(null, 204);
    })
    .openapi(downloadFolder, async (c) => {
      const session = await sessionOf(c);
      const path = session.paths.resolve(c.req.valid("query").path);
      const archive = await session.use(async () => {
        const { provider, ref } = session.machine;
        // Answers "not found" / "not a folder" as problems before any archive bytes go out.
        await provider.listFiles(ref, path);
        return folderArchive(await provider.exportHome(ref), path);
      });
      return c.body(archive, 200, {
        "content-type": "application/x-tar",
        "content-disposition": attachment(`${path.split("/").at(-1) || "home"}.tar`),
        "cache-control": "no-store",
      });
    })
    .openapi(uploadFolder, async (c) => {
      const session = await sessionOf(c);
      const path = session.paths.resolve(c.req.valid("query").path);
      const body = c.req.raw.body;
      // Not retried on a machine found gone: the body can be read only once.
      const result = body ? await unpackInto(session, path, body) : { files: 0, bytes: 0, skipped: 0 };
      await session.audit("session.files_uploaded", { path, ...result });
      return c.json(result, 200);
    });
}
