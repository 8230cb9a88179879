import { posix } from "node:path";
import type { Computer } from "@cubicle/db";
import { ProviderError } from "@cubicle/providers/contract";
import { homeRelativePath } from "@cubicle/providers/kernel";
import type { Context } from "hono";
import { defineRoute } from "../access/define-route.ts";
import { actorOf } from "../auth/principal.ts";
import { COMPUTERS, computerOf } from "../computers/http.ts";
import { reconcileComputer, touchComputer } from "../computers/lifecycle.ts";
import { type Machine, machineOf } from "../computers/repository.ts";
import type { AppEnv } from "../context.ts";
import { readBody } from "../http/body.ts";
import { binaryResponse, jsonResponse as json } from "../http/openapi.ts";
import { ComputerParams } from "../http/params.ts";
import { HttpProblem } from "../http/problem.ts";
import { createRouter } from "../http/router.ts";
import { attachment, MAX_FILE_BYTES } from "./files.ts";
import {
  FileListSchema,
  PathQuery,
  RawBody,
  SHELL_STREAM_DESCRIPTION,
  ShellEvents,
  ShellRequestSchema,
  WriteQuery,
} from "./schemas.ts";
import { MACHINE_GONE } from "./session.ts";
import { shellResponse } from "./shell.ts";

/**
 * A computer's shell and files for people in the dashboard, beside the session tools that bots
 * use. They work on the whole home, so they need no session, and they never start a computer:
 * starting (and maybe restoring a checkpoint) stays the caller's explicit decision.
 */

const COMPUTER_PATH = `${COMPUTERS}/{computerId}`;

const PATHS_DESCRIPTION =
  "Paths are relative to the computer's home; on a Team Computer that is the team home, whose " +
  "`shared/…` and `bots/<bot id>/…` folders organise work (they are not security boundaries). Absolute " +
  "paths, `..` that climbs out of the home and symlinks that lead out of it are refused (400 " +
  "`PATH_OUTSIDE_HOME`).";

const RUNNING_NOTE =
  "The computer must be running (409 `MACHINE_STOPPED` otherwise: start it first); a call counts as " +
  "activity on it.";

const describe = (...parts: string[]) => [...parts, PATHS_DESCRIPTION, RUNNING_NOTE].join(" ");

const STOPPED_409 = { description: "The computer is not running (`MACHINE_STOPPED`)" };

const MEMBER = { kind: "workspace", minRole: "member" } as const;
const ADMIN = { kind: "workspace", minRole: "admin" } as const;
const tags = ["Computer tools"];

const shell = defineRoute(ADMIN, {
  tags,
  operationId: "runComputerShell",
  method: "post",
  path: `${COMPUTER_PATH}/shell`,
  summary: "Run a command on the computer, streaming its output",
  description: describe(
    SHELL_STREAM_DESCRIPTION,
    "It starts in the home itself (`cwd` is relative to it) and is audited as `computer.shell`.",
  ),
  request: {
    params: ComputerParams,
    body: { required: true, content: { "application/json": { schema: ShellRequestSchema } } },
  },
  responses: { 200: ShellEvents, 409: STOPPED_409 },
});

const listFiles = defineRoute(MEMBER, {
  tags,
  operationId: "listComputerFiles",
  method: "get",
  path: `${COMPUTER_PATH}/files`,
  summary: "List a folder of the computer's home",
  description: describe("An empty `path` lists the home itself."),
  request: { params: ComputerParams, query: PathQuery(false) },
  responses: { 200: json("The folder's entries, sorted by name", FileListSchema), 409: STOPPED_409 },
});

const deleteFile = defineRoute(ADMIN, {
  tags,
  operationId: "deleteComputerFile",
  method: "delete",
  path: `${COMPUTER_PATH}/files`,
  summary: "Delete a file, link or folder (recursively) of the computer's home",
  description: describe("The home itself cannot be deleted. Audited as `computer.file_deleted`."),
  request: { params: ComputerParams, query: PathQuery(true) },
  responses: { 204: { description: "Deleted" }, 409: STOPPED_409 },
});

const readFile = defineRoute(MEMBER, {
  tags,
  operationId: "readComputerFile",
  method: "get",
  path: `${COMPUTER_PATH}/files/content`,
  summary: "Download a file of the computer's home",
  description: describe(
    "The bytes as `application/octet-stream`, with a `Content-Disposition` naming the file; a file over " +
      `${MAX_FILE_BYTES} bytes is refused (413 \`FILE_TOO_LARGE\`).`,
  ),
  request: { params: ComputerParams, query: PathQuery(true) },
  responses: {
    200: binaryResponse("The file"),
    409: STOPPED_409,
    413: { description: "The file is too large" },
  },
});

const writeFile = defineRoute(ADMIN, {
  tags,
  operationId: "writeComputerFile",
  method: "put",
  path: `${COMPUTER_PATH}/files/content`,
  summary: "Upload a file into the computer's home",
  description: describe(
    `The raw request body (any content type, at most ${MAX_FILE_BYTES} bytes) becomes the file's ` +
      "contents, replacing any; missing folders are made. `executable=true` sets mode 0755. Audited as " +
      "`computer.file_written`.",
  ),
  request: { params: ComputerParams, query: WriteQuery, body: RawBody },
  responses: {
    204: { description: "Written" },
    409: STOPPED_409,
    413: { description: "The body is too large" },
    507: { description: "The computer's disk is full (DISK_FULL): delete files in it and try again" },
  },
});

interface RunningComputer {
  computer: Computer;
  /**
   * Runs `work` on the machine. When the provider answers that the machine is not running after
   * all (killed or crashed outside Cubicle), the record is brought in line in the background
   * (reconcileComputer) and the caller hears MACHINE_STOPPED, as it would have a moment later.
   */
  use<T>(work: (machine: Machine) => Promise<T>): Promise<T>;
}

/** The route's computer and its machine, refused unless it runs. */
async function runningComputer(c: Context<AppEnv>): Promise<RunningComputer> {
  const computer = await computerOf(c);
  const machine = await machineOf(c.var.deps, computer);
  // A machine of another provider kind is no machine: the next start replaces it.
  if (computer.state !== "running" || machine.ref.providerRef === null)
    throw new HttpProblem(
      409,
      "MACHINE_STOPPED",
      `The computer is ${computer.state === "running" ? "not on the provider in effect" : computer.state}; start it first.`,
    );
  await touchComputer(c.var.deps, computer.id);
  const { deps } = c.var;
  return {
    computer,
    use: (work) =>
      work(machine).catch((error: unknown) => {
        if (error instanceof ProviderError && MACHINE_GONE.includes(error.code))
          void reconcileComputer(deps, computer).catch((failure: unknown) =>
            deps.logger.warn(
              { err: failure, computerId: computer.id },
              "could not reconcile a stopped computer",
            ),
          );
        throw error;
      }),
  };
}

const audit = (c: Context<AppEnv>, computer: Computer, action: string, data: Record<string, unknown>) =>
  c.var.deps.audit.record({
    actor: actorOf(c.var.principal),
    workspaceId: computer.workspace_id,
    action,
    target: { type: "computer", id: computer.id },
    data,
  });

export function computerToolRoutes() {
  return createRouter()
    .openapi(shell, async (c) => {
      const body = c.req.valid("json");
      const cwd = homeRelativePath(body.cwd ?? "");
      const { computer, use } = await runningComputer(c);
      return shellResponse(c, body, {
        cwd,
        env: {},
        audit: (data) => audit(c, computer, "computer.shell", data),
        use,
      });
    })
    .openapi(listFiles, async (c) => {
      const path = homeRelativePath(c.req.valid("query").path);
      const { use } = await runningComputer(c);
      const items = await use((machine) => machine.provider.listFiles(machine.ref, path));
      return c.json({ path, items }, 200);
    })
    .openapi(deleteFile, async (c) => {
      const path = homeRelativePath(c.req.valid("query").path);
      const { computer, use } = await runningComputer(c);
      await use((machine) => machine.provider.deleteFile(machine.ref, path));
      await audit(c, computer, "computer.file_deleted", { path });
      return c.body(null, 204);
    })
    .openapi(readFile, async (c) => {
      const path = homeRelativePath(c.req.valid("query").path);
      const { use } = await runningComputer(c);
      const data = await use((machine) =>
        machine.provider.readFile(machine.ref, path, { maxBytes: MAX_FILE_BYTES }),
      );
      return c.body(new Uint8Array(data), 200, {
        "content-type": "application/octet-stream",
        "content-disposition": attachment(posix.basename(path)),
        "cache-control": "no-store",
      });
    })
    .openapi(writeFile, async (c) => {
      const { path: asked, executable } = c.req.valid("query");
      const path = homeRelativePath(asked);
      const { computer, use } = await runningComputer(c);
      const data = await readBody(c.req.raw, MAX_FILE_BYTES, "The file");
      await use((machine) =>
        machine.provider.writeFile(machine.ref, path, data, { executable: executable === "true" }),
      );
      await audit(c, computer, "computer.file_written", {
        path,
        bytes: data.byteLength,
        executable: executable === "true",
      });
      return c.body(null, 204);
    });
}
