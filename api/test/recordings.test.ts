import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Computer } from "@cubicle/db";
// the proxy's side of the upload, against the real ingest
import { ProxyMetrics, Recorder } from "@cubicle/proxy";
import { CapabilityKeyring, mintServiceToken, verifyCapability } from "@cubicle/proxy/capability";
import {
  concatBytes,
  encodeRecord,
  RECORDING_FILE_MAGIC,
  type RecordingRecord,
  RecordKind,
  RecordReader,
} from "@cubicle/proxy/recording";
import { sql } from "kysely";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  client,
  framebufferUpdate,
  keyEvent,
  NOVNC_FORMAT,
  pointerEvent,
  rect,
  server,
  serverInit,
  setPixelFormat,
  tightFill,
} from "../src/recordings/decode/testing/rfb-stream.ts";
import { STALE_REASON } from "../src/recordings/housekeeping.ts";
import { createPendingRecording, tidyRecordings } from "../src/recordings/index.ts";
import { PROXY_WENT_AWAY } from "../src/recordings/ingest.ts";
import { createComputer } from "../testing/computers.ts";
import { expectStatus, startTestApi, type TestApi, type TestClient } from "../testing/harness.ts";
import { recordingOf, upload } from "../testing/recording-uploads.ts";
import { problem } from "../testing/sessions.ts";
import { until } from "../testing/until.ts";
import { buildWorld, type World } from "../testing/world.ts";

const KEY = randomBytes(32).toString("base64url");
const keyring = new CapabilityKeyring({ current: KEY });

let t: TestApi;
let w: World;
let computer: Computer;
let otherComputer: Computer;

beforeAll(async () => {
  t = await startTestApi({ SCREEN_CAPABILITY_KEY: KEY });
  w = await buildWorld(t, "recordings");
  computer = await createComputer(t, w.workspaceId);
  otherComputer = await createComputer(t, w.otherWorkspaceId);
});
afterAll(() => t?.close());

const base = (workspaceId = w.workspaceId) => `/v1/workspaces/${workspaceId}/recordings`;
const db = () => t.database.db;

/** A pending control recording of the workspace's computer, as minting a control capability makes one. */
function pending(of: Computer = computer, admin: TestClient = w.people.admin) {
  return createPendingRecording(db(), {
    workspaceId: of.workspace_id,
    computerId: of.id,
    screen: 0,
    kind: "control",
    controlLeaseId: randomBytes(8).toString("hex"),
    actor: { type: "user", id: admin.userId, name: admin.email },
  });
}

/** A server update of `size` random bytes at `at` ms. */
const screenBytes = (at: number, size: number): RecordingRecord => ({
  kind: RecordKind.SERVER,
  at,
  bytes: randomBytes(size),
});

async function recorded(
  extra: RecordingRecord[],
  end?: { complete: boolean; reason?: string } | null,
  of?: Computer,
) {
  const id = await pending(of);
  const recording = recordingOf(extra, end);
  const response = await upload(t.api.url, keyring, id, recording.bytes);
  expect(response.status, await response.clone().text()).toBe(204);
  return { id, ...recording };
}

const row = (id: string) => db().selectFrom("recordings").selectAll().where("id", "=", id).executeTakeFirst();
const audits = (action: string, recordingId: string) =>
  db()
    .selectFrom("audit_events")
    .selectAll()
    .where("action", "=", action)
    .where("target_id", "=", recordingId)
    .execute();

async function content(who: TestClient, id: string, query = "") {
  const response = await who.fetch("GET", `${base()}/${id}/content${query}`);
  return { response, bytes: new Uint8Array(await response.arrayBuffer()) };
}

const asFile = (bytes: Uint8Array) => concatBytes([new TextEncoder().encode(RECORDING_FILE_MAGIC), bytes]);

describe("ingest", () => {
  it("stores a complete recording in sealed chunks that end on records, and plays it back as sent", async () => {
    const extra = [
      {
        kind: RecordKind.CLIENT,
        at: 5,
        bytes: new Uint8Array([0, 0, 0, 0, 32, 24, 0, 1]),
      } as RecordingRecord,
      ...Array.from({ length: 12 }, (_, i) => screenBytes(100 * (i + 1), 60_000)),
    ];
    const { id, bytes } = await recorded(extra);

    const body = expectStatus(await w.people.admin.get(`${base()}/${id}`), 200).json;
    expect(body).toMatchObject({
      id,
      workspaceId: w.workspaceId,
      computerId: computer.id,
      kind: "control",
      status: "complete",
      incompleteReason: null,
      durationMs: 1200,
      bytes: bytes.length,
      width: 1280,
      height: 800,
      actor: { type: "user", id: w.people.admin.userId },
    });
    expect(body.endedAt).not.toBeNull();

    const chunks = await db()
      .selectFrom("recording_chunks")
      .selectAll()
      .where("recording_id", "=", id)
      .orderBy("seq")
      .execute();
    expect(chunks.length).toBeGreaterThan(1);
    let offset = 0;
    for (const chunk of chunks) {
      expect(chunk.offset).toBe(offset);
      offset += chunk.bytes;
    }
    expect(offset).toBe(bytes.length);
    // sealed at rest: no stored chunk holds the screen's bytes in the clear
    const stored = readdirSync(join(t.api.deps.env.recordings.dir, id));
    expect(stored).toHaveLength(chunks.length);
    const sample = Buffer.from((extra[1] as { bytes: Uint8Array }).bytes.subarray(0, 64));
    for (const name of stored) {
      const file = readFileSync(join(t.api.deps.env.recordings.dir, id, name));
      expect(file.includes(sample)).toBe(false);
    }

    const played = await content(w.people.admin, id);
    expect(played.response.headers.get("content-type")).toBe("application/vnd.cubicle.recording");
    expect(played.response.headers.get("content-disposition")).toBeNull();
    expect(Buffer.from(played.bytes).equals(Buffer.from(asFile(bytes)))).toBe(true);
    expect(await audits("recording.played", id)).toHaveLength(1);

    const downloaded = await content(w.people.owner, id, "?download=1");
    expect(downloaded.response.headers.get("content-disposition")).toBe(
      `attachment; filename="recording-${id}.cubicle-rec"`,
    );
    expect(Buffer.from(downloaded.bytes).equals(Buffer.from(asFile(bytes)))).toBe(true);
    const [download] = await audits("recording.downloaded", id);
    expect(download).toMatchObject({ actor_id: w.people.owner.userId, workspace_id: w.workspaceId });
  });

  it("ends incomplete with the reason an END record gives", async () => {
    const { id } = await recorded([screenBytes(40, 100)], {
      complete: false,
      reason: "the recording fell behind the screen",
    });
    expect(await row(id)).toMatchObject({
      status: "incomplete",
      incomplete_reason: "the recording fell behind the screen",
    });
  });

  it("takes a body without END as a part: stored, the recording still going, its upload touched", async () => {
    const { id, bytes } = await recorded([screenBytes(40, 100)], null);
    const now = await row(id);
    expect(now).toMatchObject({ status: "recording", bytes: bytes.length, duration_ms: 40 });
    expect(now?.ingested_at).not.toBeNull();
    const played = await content(w.people.admin, id);
    expect(Buffer.from(played.bytes).equals(Buffer.from(asFile(bytes)))).toBe(true);
  });

  it("keeps every whole record of an upload that breaks off, and ends it incomplete", async () => {
    const id = await pending();
    const whole = recordingOf([screenBytes(10, 1000), screenBytes(20, 1000)], null).bytes;
    const cut = encodeRecord(screenBytes(30, 1000)).subarray(0, 500);
    const stop = new AbortController();
    let sent!: () => void;
    const allSent = new Promise<void>((resolve) => {
      sent = resolve;
    });
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(whole);
        controller.enqueue(cut);
        sent();
      },
    });
    const answered = upload(t.api.url, keyring, id, body, stop.signal).catch((error: Error) => error);
    await allSent;
    await until("the upload has begun", async () =>
      (await row(id))?.status === "recording" ? true : undefined,
    );
    // give the api the bytes in flight, then the proxy goes
    await new Promise((resolve) => setTimeout(resolve, 300));
    stop.abort();
    expect(await answered).toBeInstanceOf(Error);

    const ended = await until("the recording ends", async () => {
      const now = await row(id);
      return now?.status === "incomplete" ? now : undefined;
    });
    expect(ended.incomplete_reason).toBe(PROXY_WENT_AWAY);
    const played = await content(w.people.admin, id);
    expect(Buffer.from(played.bytes).equals(Buffer.from(asFile(whole)))).toBe(true);
  });

  it("answers 507 at once when the store cannot write, and ends the recording incomplete", async () => {
    const id = await pending();
    // a file where the recording's folder would go: every write of it fails
    mkdirSync(t.api.deps.env.recordings.dir, { recursive: true });
    writeFileSync(join(t.api.deps.env.recordings.dir, id), "in the way");
    // a chunk's worth, then the upload stays open as a live socket's does
    const first = recordingOf(
      Array.from({ length: 5 }, (_, i) => screenBytes(i * 10, 60_000)),
      null,
    ).bytes;
    const body = new ReadableStream<Uint8Array>({ start: (controller) => controller.enqueue(first) });
    const response = await upload(t.api.url, keyring, id, body);
    expect(response.status).toBe(507);
    expect(await response.json()).toMatchObject({ status: 507, code: "RECORDING_STORE_FAILED" });
    const ended = await row(id);
    expect(ended?.status).toBe("incomplete");
    expect(ended?.incomplete_reason).toMatch(/^the recording store failed: /);
  });

  it("refuses uploads without a service token, of unknown recordings, and of recordings not pending", async () => {
    const { bytes } = recordingOf([]);
    const anonymous = await fetch(`${t.api.url}/internal/recordings/x/content`, {
      method: "POST",
      headers: { "content-type": "application/octet-stream" },
      body: bytes as BodyInit,
    });
    expect(anonymous.status).toBe(404);
    expect((await upload(t.api.url, keyring, "no-such-recording", bytes)).status).toBe(404);
    const { id } = await recorded([]);
    const again = await upload(t.api.url, keyring, id, bytes);
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ code: "RECORDING_NOT_PENDING" });
  });
});

describe("an upload in parts", () => {
  const chunks = (id: string) =>
    db().selectFrom("recording_chunks").selectAll().where("recording_id", "=", id).orderBy("seq").execute();
  const encoded = (records: RecordingRecord[]) => concatBytes(records.map(encodeRecord));
  const part = (id: string, bytes: Uint8Array, offset: number) =>
    upload(t.api.url, keyring, id, bytes, undefined, offset);

  it("continues one recording over three parts, its chunks' seq and offset going on, and reads back byte-equal", async () => {
    const id = await pending();
    const { records, bytes } = recordingOf(
      Array.from({ length: 9 }, (_, i) => screenBytes(100 * (i + 1), 100_000)),
    );
    // ServerInit and three updates; four updates; two updates and END
    const parts = [records.slice(0, 4), records.slice(4, 8), records.slice(8)].map(encoded);
    let offset = 0;
    for (const [index, piece] of parts.entries()) {
      const response = await part(id, piece, offset);
      expect(response.status, await response.clone().text()).toBe(204);
      offset += piece.length;
      const now = await row(id);
      if (index < parts.length - 1) {
        // between parts: everything of the part is stored and indexed, and the recording goes on
        expect(now).toMatchObject({ status: "recording", bytes: offset, width: 1280, height: 800 });
        expect(now?.ingested_at).not.toBeNull();
        const stored = await chunks(id);
        expect(stored.reduce((sum, chunk) => sum + chunk.bytes, 0)).toBe(offset);
      }
    }
    expect(offset).toBe(bytes.length);
    expect(await row(id)).toMatchObject({
      status: "complete",
      bytes: bytes.length,
      duration_ms: 900,
      ingested_at: null,
    });
    const stored = await chunks(id);
    expect(stored.map((chunk) => chunk.seq)).toEqual(stored.map((_, i) => i));
    expect(stored.length).toBeGreaterThanOrEqual(3);
    let at = 0;
    for (const chunk of stored) {
      expect(chunk.offset).toBe(at);
      at += chunk.bytes;
    }
    // no chunk spans two parts: each part closed its last one
    const boundaries = new Set(stored.map((chunk) => chunk.offset + chunk.bytes));
    expect(boundaries.has(parts[0]?.length ?? -1)).toBe(true);
    expect(boundaries.has((parts[0]?.length ?? 0) + (parts[1]?.length ?? 0))).toBe(true);
    const played = await content(w.people.admin, id);
    expect(Buffer.from(played.bytes).equals(Buffer.from(asFile(bytes)))).toBe(true);
  });

  it("continues after a part that brought nothing (a still screen)", async () => {
    const id = await pending();
    expect((await part(id, new Uint8Array(0), 0)).status).toBe(204);
    expect(await row(id)).toMatchObject({ status: "recording", bytes: 0 });
    const { bytes } = recordingOf([screenBytes(70_000, 100)]);
    expect((await part(id, bytes, 0)).status).toBe(204);
    expect(await row(id)).toMatchObject({ status: "complete", bytes: bytes.length, duration_ms: 70_000 });
  });

  it("refuses a part that does not continue what is stored (409), and ends the recording incomplete keeping it", async () => {
    const id = await pending();
    const { records } = recordingOf([screenBytes(10, 1000), screenBytes(20, 1000)]);
    const first = encoded(records.slice(0, 2));
    expect((await part(id, first, 0)).status).toBe(204);
    const later = encoded(records.slice(2));
    const refused = await part(id, later, first.length + 1);
    expect(refused.status).toBe(409);
    expect(refused.headers.get("content-type")).toContain("application/problem+json");
    expect(await refused.json()).toMatchObject({ status: 409, code: "RECORDING_OFFSET_MISMATCH" });
    // and the right part, too late: the recording ended
    const right = await part(id, later, first.length);
    expect(right.status).toBe(409);
    expect(await right.json()).toMatchObject({ code: "RECORDING_ENDED" });
    const ended = await row(id);
    expect(ended).toMatchObject({ status: "incomplete", bytes: first.length });
    expect(ended?.incomplete_reason).toBe(
      `a part of its upload did not continue it (offset ${first.length + 1}, ${first.length} bytes stored)`,
    );
    const played = await content(w.people.admin, id);
    expect(Buffer.from(played.bytes).equals(Buffer.from(asFile(first)))).toBe(true);

    // a later part of a recording not yet begun is refused the same way, and changes nothing
    const waiting = await pending();
    const early = await part(waiting, later, 100);
    expect(early.status).toBe(409);
    expect(await early.json()).toMatchObject({ code: "RECORDING_OFFSET_MISMATCH" });
    expect(await row(waiting)).toMatchObject({ status: "pending" });
  });

  it("refuses a part after END, or of a recording that ended, with 409", async () => {
    const { id, bytes } = await recorded([screenBytes(10, 100)]);
    const more = encoded([screenBytes(30, 100)]);
    const after = await part(id, more, bytes.length);
    expect(after.status).toBe(409);
    expect(await after.json()).toMatchObject({ code: "RECORDING_ENDED" });
    const { id: cut } = await recorded([screenBytes(10, 100)], { complete: false, reason: "cut" });
    const late = await part(cut, more, 5);
    expect(late.status).toBe(409);
    expect(await late.json()).toMatchObject({ code: "RECORDING_ENDED" });
    expect(await row(id)).toMatchObject({ status: "complete", bytes: bytes.length });
    expect(await row(cut)).toMatchObject({ status: "incomplete", incomplete_reason: "cut" });
  });

  it("refuses a part whose time goes back before what is stored, or that ends inside a record", async () => {
    const back = await pending();
    const first = encoded(recordingOf([screenBytes(500, 100)], null).records);
    expect((await part(back, first, 0)).status).toBe(204);
    const refused = await part(back, encoded([screenBytes(499, 100)]), first.length);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ code: "RECORDING_MALFORMED" });
    expect((await row(back))?.incomplete_reason).toMatch(
      /^the recording stream was damaged: record time goes back/,
    );

    const torn = await pending();
    const whole = encoded(recordingOf([screenBytes(10, 100)], null).records);
    const cut = encodeRecord(screenBytes(20, 100)).subarray(0, 50);
    const response = await part(torn, concatBytes([whole, cut]), 0);
    expect(response.status).toBe(400);
    const ended = await row(torn);
    expect(ended).toMatchObject({ status: "incomplete", bytes: whole.length });
    expect(ended?.incomplete_reason).toMatch(/ends 50 bytes into a record/);
  });

  it("takes the proxy's own Recorder uploading in parts, and reads back what it recorded", async () => {
    const id = await pending();
    const metrics = new ProxyMetrics();
    const recorder = new Recorder({
      recordingId: id,
      apiUrl: t.api.url,
      authorization: `Bearer ${await mintServiceToken(keyring, "proxy")}`,
      maxBufferedBytes: 8 * 1024 * 1024,
      partMs: 150,
      metrics,
      logger: pino({ level: "silent" }),
    });
    const sent = [Buffer.from(serverInit(1280, 800))];
    recorder.server(sent[0] as Buffer);
    for (let i = 0; i < 10; i++) {
      const update = randomBytes(40_000);
      sent.push(update);
      recorder.server(update);
      recorder.client(keyEvent(0x61 + i, true));
      await new Promise((resolve) => setTimeout(resolve, 60));
    }
    await recorder.end({ complete: true });
    expect((await metrics.recordingsFailed.get()).values).toEqual([]);

    const ended = await row(id);
    expect(ended).toMatchObject({ status: "complete", width: 1280, height: 800 });
    const stored = await chunks(id);
    expect(stored.map((chunk) => chunk.seq)).toEqual(stored.map((_, i) => i));
    // more than one part: a chunk closed mid-way at least once per part
    expect(stored.length).toBeGreaterThanOrEqual(3);
    const played = await content(w.people.admin, id);
    const records = new RecordReader().push(
      played.bytes.subarray(new TextEncoder().encode(RECORDING_FILE_MAGIC).length),
    );
    expect(played.bytes.length - RECORDING_FILE_MAGIC.length).toBe(ended?.bytes);
    const screen = Buffer.concat(records.flatMap((r) => (r.kind === RecordKind.SERVER ? [r.bytes] : [])));
    expect(screen.equals(Buffer.concat(sent))).toBe(true);
    expect(records.filter((r) => r.kind === RecordKind.CLIENT)).toHaveLength(10);
    expect(records.at(-1)).toMatchObject({ kind: RecordKind.END, complete: true });
  });

  it("refuses an offset that is not a whole number of bytes", async () => {
    const id = await pending();
    for (const offset of ["-1", "1.5", "abc", "01", "9".repeat(16)]) {
      const response = await fetch(`${t.api.url}/internal/recordings/${id}/content?offset=${offset}`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${await mintServiceToken(keyring, "proxy")}`,
          "content-type": "application/octet-stream",
        },
        body: new Uint8Array(0) as BodyInit,
      });
      expect(response.status, offset).toBe(400);
    }
    expect(await row(id)).toMatchObject({ status: "pending" });
  });
});

describe("access", () => {
  let id: string;
  let otherId: string;
  beforeAll(async () => {
    id = (await recorded([screenBytes(10, 100)])).id;
    otherId = (await recorded([screenBytes(10, 100)], undefined, otherComputer)).id;
  });

  const reads = (recordingId: string) => [
    ["GET", `${base()}`],
    ["GET", `${base()}/${recordingId}`],
    ["GET", `${base()}/${recordingId}/content`],
    ["GET", `${base()}/${recordingId}/frame?at=0`],
    ["GET", `${base()}/${recordingId}/inputs`],
    ["POST", `${base()}/${recordingId}/exports`],
    ["GET", `${base()}/${recordingId}/exports/x`],
    ["GET", `${base()}/${recordingId}/exports/x/content`],
    ["DELETE", `${base()}/${recordingId}`],
  ];

  it("refuses members and viewers every recording route", async () => {
    for (const who of ["member", "viewer"] as const) {
      for (const [method, path] of reads(id)) {
        const response = await w.people[who].request(method as string, path as string, {
          ...(method === "POST" ? { body: { format: "webm" } } : {}),
        });
        problem(response, 403, "ROLE_FORBIDDEN");
      }
    }
    expect(await audits("recording.played", id)).toHaveLength(0);
  });

  it("answers 404 for another workspace's recording, and its admins see only their own", async () => {
    for (const [method, path] of reads(otherId).slice(1)) {
      const response = await w.people.admin.request(method as string, path as string, {
        ...(method === "POST" ? { body: { format: "webm" } } : {}),
      });
      problem(response, 404, "RECORDING_NOT_FOUND");
    }
    const theirs = expectStatus(await w.people.outsider.get(base(w.otherWorkspaceId)), 200).json;
    expect(theirs.items.map((r: { id: string }) => r.id)).toEqual([otherId]);
    problem(await w.people.outsider.get(`${base()}/${id}`), 404, "WORKSPACE_NOT_FOUND");
  });

  it("lists newest first with filters and a cursor, never pending ones", async () => {
    const waiting = await pending();
    const all = expectStatus(await w.people.admin.get(`${base()}?limit=200`), 200).json.items as {
      id: string;
      startedAt: string;
    }[];
    expect(all.map((r) => r.id)).not.toContain(waiting);
    expect(all.map((r) => r.id)).toContain(id);
    const starts = all.map((r) => r.startedAt);
    expect([...starts].sort().reverse()).toEqual(starts);
    const first = expectStatus(await w.people.admin.get(`${base()}?limit=2`), 200).json;
    const second = expectStatus(
      await w.people.admin.get(`${base()}?limit=2&cursor=${first.nextCursor}`),
      200,
    ).json;
    expect([...first.items, ...second.items].map((r: { id: string }) => r.id)).toEqual(
      all.slice(0, 4).map((r) => r.id),
    );
    const incomplete = expectStatus(await w.people.admin.get(`${base()}?status=incomplete`), 200).json.items;
    expect(incomplete.length).toBeGreaterThan(0);
    expect(incomplete.every((r: { status: string }) => r.status === "incomplete")).toBe(true);
    problem(await w.people.admin.get(`${base()}?cursor=nonsense`), 400, "INVALID_CURSOR");
  });

  it("lets an admin delete a recording: its row, index and objects go, audited", async () => {
    const { id: doomed } = await recorded([screenBytes(10, 100)]);
    expect(existsSync(join(t.api.deps.env.recordings.dir, doomed))).toBe(true);
    expectStatus(await w.people.admin.delete(`${base()}/${doomed}`), 204);
    expect(await row(doomed)).toBeUndefined();
    expect(
      await db().selectFrom("recording_chunks").select("seq").where("recording_id", "=", doomed).execute(),
    ).toEqual([]);
    expect(existsSync(join(t.api.deps.env.recordings.dir, doomed))).toBe(false);
    expect(await audits("recording.deleted", doomed)).toHaveLength(1);
    problem(await w.people.admin.get(`${base()}/${doomed}`), 404, "RECORDING_NOT_FOUND");
  });
});

describe("replay", () => {
  const RED = [255, 0, 0] as const;
  const BLUE = [0, 0, 255] as const;
  // Tight's fill: the whole screen one colour, in four bytes
  const fill = (colour: readonly [number, number, number]) =>
    framebufferUpdate(rect(0, 0, 1280, 800, 7, tightFill(colour)));
  let id: string;
  beforeAll(async () => {
    // typed "hi", a click, and the screen red, then blue
    id = (
      await recorded([
        client(0, setPixelFormat(NOVNC_FORMAT)),
        server(100, fill(RED)),
        client(500, keyEvent(0x68, true)),
        client(520, keyEvent(0x68, false)),
        client(600, keyEvent(0x69, true)),
        client(620, keyEvent(0x69, false)),
        client(700, pointerEvent(1, 40, 30)),
        client(720, pointerEvent(0, 40, 30)),
        server(2000, fill(BLUE)),
      ])
    ).id;
  });

  it("decodes the screen at a moment as a PNG, audited with the moment", async () => {
    const frame = async (at: number) => {
      const response = await w.people.admin.fetch("GET", `${base()}/${id}/frame?at=${at}`);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("image/png");
      return Buffer.from(await response.arrayBuffer());
    };
    const red = await frame(1000);
    expect(red.subarray(1, 4).toString("latin1")).toBe("PNG");
    // IHDR: the screen's size
    expect([red.readUInt32BE(16), red.readUInt32BE(20)]).toEqual([1280, 800]);
    expect((await frame(1500)).equals(red)).toBe(true);
    expect((await frame(2500)).equals(red)).toBe(false);
    const played = await audits("recording.played", id);
    expect(played.map((event) => event.data.at)).toEqual([1000, 1500, 2500]);
    problem(await w.people.admin.get(`${base()}/${id}/frame?at=-1`), 400, "VALIDATION_FAILED");
  });

  it("lists what the person typed and clicked", async () => {
    const { inputs } = expectStatus(await w.people.admin.get(`${base()}/${id}/inputs`), 200).json;
    expect(inputs).toEqual([
      { at: 500, type: "text", text: "hi" },
      { at: 700, type: "click", button: "left", x: 40, y: 30 },
    ]);
  });

  it("exports a WebM in the background, with its progress, and downloads it audited", async () => {
    const queued = expectStatus(
      await w.people.admin.post(`${base()}/${id}/exports`, { format: "webm" }),
      202,
    ).json;
    expect(queued).toMatchObject({ recordingId: id, format: "webm", status: "queued", progress: 0 });
    const ready = await until(
      "the export",
      async () => {
        const now = expectStatus(await w.people.admin.get(`${base()}/${id}/exports/${queued.id}`), 200).json;
        expect(now.status).not.toBe("failed");
        return now.status === "ready" ? now : undefined;
      },
      60_000,
    );
    expect(ready).toMatchObject({ progress: 1, error: null });
    expect(ready.bytes).toBeGreaterThan(0);
    const response = await w.people.admin.fetch("GET", `${base()}/${id}/exports/${queued.id}/content`);
    expect(response.headers.get("content-type")).toBe("video/webm");
    const video = Buffer.from(await response.arrayBuffer());
    expect(video.length).toBe(ready.bytes);
    // EBML, as every WebM begins
    expect(video.subarray(0, 4).toString("hex")).toBe("1a45dfa3");
    const [requested] = await audits("recording.export_requested", id);
    expect(requested?.data).toMatchObject({ exportId: queued.id, format: "webm" });
    const downloads = await audits("recording.downloaded", id);
    expect(downloads.map((event) => event.data.exportId)).toEqual([queued.id]);
  });

  it("refuses an export's download before it is ready", async () => {
    const waiting = await db()
      .insertInto("recording_exports")
      .values({ recording_id: id, workspace_id: w.workspaceId, format: "webm", requested_by: "test" })
      .returning("id")
      .executeTakeFirstOrThrow();
    problem(
      await w.people.admin.get(`${base()}/${id}/exports/${waiting.id}/content`),
      409,
      "EXPORT_NOT_READY",
    );
  });
});

describe("policy", () => {
  const path = () => `/v1/workspaces/${w.workspaceId}/recording-policy`;

  it("is off until an admin sets it; any member reads it; setting it is audited with before and after", async () => {
    expect(expectStatus(await w.people.viewer.get(path()), 200).json).toEqual({
      mode: "off",
      retentionDays: null,
      retentionBytes: null,
    });
    const policy = { mode: "control-and-sessions", retentionDays: 30, retentionBytes: 1_000_000_000 };
    problem(await w.people.member.put(path(), policy), 403, "ROLE_FORBIDDEN");
    problem(await w.people.admin.put(path(), { ...policy, mode: "always" }), 400, "VALIDATION_FAILED");
    problem(await w.people.admin.put(path(), { ...policy, retentionDays: 0 }), 400, "VALIDATION_FAILED");
    expect(expectStatus(await w.people.admin.put(path(), policy), 200).json).toEqual(policy);
    expect(expectStatus(await w.people.member.get(path()), 200).json).toEqual(policy);
    const [changed] = await db()
      .selectFrom("audit_events")
      .selectAll()
      .where("action", "=", "workspace.recording_policy_changed")
      .where("workspace_id", "=", w.workspaceId)
      .execute();
    expect(changed?.actor_id).toBe(w.people.admin.userId);
    expect(changed?.data).toEqual({
      before: { mode: "off", retentionDays: null, retentionBytes: null },
      after: policy,
    });
    expectStatus(
      await w.people.admin.put(path(), { mode: "off", retentionDays: null, retentionBytes: null }),
      200,
    );
  });
});

describe("control capabilities", () => {
  const screenPath = (rest: string) =>
    `/v1/workspaces/${w.workspaceId}/computers/${computer.id}/screens/3${rest}`;
  const setMode = (mode: string) =>
    w.people.admin.put(`/v1/workspaces/${w.workspaceId}/recording-policy`, {
      mode,
      retentionDays: null,
      retentionBytes: null,
    });

  it("carry a recording id when the workspace records control, and none when it does not", async () => {
    const member = w.people.member;
    const lease = expectStatus(await member.post(screenPath("/control")), 201).json;
    const accept = { replay: { claim: async () => true } };

    expectStatus(await setMode("off"), 200);
    const unrecorded = expectStatus(
      await member.post(screenPath("/capabilities"), { mode: "control" }),
      201,
    ).json;
    expect(unrecorded.recorded).toBe(false);
    expect((await verifyCapability(keyring, unrecorded.token, accept)).recordingId).toBeUndefined();

    expectStatus(await setMode("control"), 200);
    const minted = expectStatus(
      await member.post(screenPath("/capabilities"), { mode: "control" }),
      201,
    ).json;
    expect(minted.recorded).toBe(true);
    const { recordingId } = await verifyCapability(keyring, minted.token, accept);
    expect(recordingId).toEqual(expect.any(String));
    expect(await row(recordingId as string)).toMatchObject({
      status: "pending",
      kind: "control",
      control_lease_id: lease.leaseId,
      computer_id: computer.id,
      screen: 3,
      actor_type: "user",
      actor_id: member.userId,
    });
    const grants = await db()
      .selectFrom("audit_events")
      .select("data")
      .where("action", "=", "screen.capability_minted")
      .where("workspace_id", "=", w.workspaceId)
      .orderBy("id", "desc")
      .limit(2)
      .execute();
    expect(grants[0]?.data).toMatchObject({ mode: "control", leaseId: lease.leaseId, recordingId });
    expect(grants[1]?.data).not.toHaveProperty("recordingId");
    // a viewer of the screen is shown that it is recorded
    const view = expectStatus(
      await w.people.viewer.post(screenPath("/capabilities"), { mode: "view" }),
      201,
    ).json;
    expect(view.recorded).toBe(true);
    expectStatus(await setMode("off"), 200);
  });
});

describe("housekeeping", () => {
  const setPolicy = async (client: TestClient, workspaceId: string, policy: object) =>
    expectStatus(
      await client.put(`/v1/workspaces/${workspaceId}/recording-policy`, {
        mode: "control",
        retentionDays: null,
        retentionBytes: null,
        ...policy,
      }),
      200,
    );
  const age = (id: string, days: number) =>
    db()
      .updateTable("recordings")
      .set({ started_at: sql<Date>`now() - cast(${days} as integer) * interval '1 day'` })
      .where("id", "=", id)
      .execute();
  const deps = () => t.api.deps;

  it("removes recordings older than the workspace keeps, and nothing else", async () => {
    const old = (await recorded([screenBytes(10, 100)])).id;
    const recent = (await recorded([screenBytes(10, 100)])).id;
    const othersOld = (await recorded([screenBytes(10, 100)], undefined, otherComputer)).id;
    const live = await pending();
    await db()
      .updateTable("recordings")
      .set({ status: "recording", started_at: new Date(), ingested_at: new Date() })
      .where("id", "=", live)
      .execute();
    for (const id of [old, othersOld, live]) await age(id, 10);
    const checkpointSentinel = join(deps().env.checkpoints.dir, "sentinel");
    mkdirSync(deps().env.checkpoints.dir, { recursive: true });
    writeFileSync(checkpointSentinel, "checkpoints stay");
    await setPolicy(w.people.admin, w.workspaceId, { retentionDays: 7 });

    await tidyRecordings(deps());

    expect(await row(old)).toBeUndefined();
    expect(existsSync(join(deps().env.recordings.dir, old))).toBe(false);
    expect(await row(recent)).toMatchObject({ status: "complete" });
    expect(await row(othersOld)).toMatchObject({ status: "complete" });
    expect(await row(live)).toMatchObject({ status: "recording" });
    expect(existsSync(checkpointSentinel)).toBe(true);
    const [pruned] = await db()
      .selectFrom("audit_events")
      .select("data")
      .where("action", "=", "recording.pruned")
      .where("workspace_id", "=", w.workspaceId)
      .execute();
    expect(pruned?.data).toMatchObject({ recordingIds: [old], retentionDays: 7 });
    await db()
      .updateTable("recordings")
      .set({ status: "complete", ingested_at: null })
      .where("id", "=", live)
      .execute();
  });

  it("removes the oldest recordings while the workspace's exceed its byte cap", async () => {
    const sizes = await db()
      .selectFrom("recordings")
      .select(["id", "bytes"])
      .where("workspace_id", "=", w.otherWorkspaceId)
      .where("status", "!=", "pending")
      .orderBy("started_at")
      .execute();
    const newer = (await recorded([screenBytes(10, 5_000)], undefined, otherComputer)).id;
    const newerBytes = (await row(newer))?.bytes ?? 0;
    await setPolicy(w.people.outsider, w.otherWorkspaceId, { retentionBytes: newerBytes });

    await tidyRecordings(deps());

    for (const { id } of sizes) expect(await row(id)).toBeUndefined();
    expect(await row(newer)).toMatchObject({ status: "complete" });
  });

  it("drops pending recordings never opened, and ends recordings whose upload went quiet", async () => {
    const unopened = await pending();
    const fresh = await pending();
    const quiet = await pending();
    await db()
      .updateTable("recordings")
      .set({ created_at: sql<Date>`now() - interval '10 minutes'` } as never)
      .where("id", "=", unopened)
      .execute();
    await db()
      .updateTable("recordings")
      .set({
        status: "recording",
        started_at: sql<Date>`now() - interval '2 hours'`,
        ingested_at: sql<Date>`now() - interval '1 hour'`,
      })
      .where("id", "=", quiet)
      .execute();

    await tidyRecordings(deps());

    expect(await row(unopened)).toBeUndefined();
    expect(await row(fresh)).toMatchObject({ status: "pending" });
    expect(await row(quiet)).toMatchObject({ status: "incomplete", incomplete_reason: STALE_REASON });
  });
});
