import { setTimeout as sleep } from "node:timers/promises";
import { until } from "@cubicle/api/testing/until";
import { describe, expect, it } from "vitest";
import {
  ComputerBusyError,
  CubicleError,
  type Session,
  type ShellEvent,
  type WorkspaceEvent,
} from "../src/index.ts";
import { deployment, makeBot, memberClient, pngSize } from "../testing/index.ts";

/** A computer's first start (container, desktop, screens) is slow on a busy host. */
const SLOW = 240_000;

/** Reads a stream to its end as text. */
async function text(stream: ReadableStream<Uint8Array>): Promise<string> {
  return new Response(stream).text();
}

/** A stream giving these chunks one by one, as a file read from disk would. */
function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    pull(controller) {
      const next = chunks.shift();
      if (next === undefined) controller.close();
      else controller.enqueue(encoder.encode(next));
    },
  });
}

describe("an automation with only the library and a member's API key", () => {
  it("opens a session, streams and aborts a command, observes, acts, moves files, checkpoints and ends", {
    timeout: SLOW,
  }, async () => {
    const cubicle = memberClient();
    const bot = await makeBot("Library");
    const session = await cubicle.openSession(bot.name);
    expect(session).toMatchObject({ botId: bot.id, workspaceId: deployment().workspaceId });
    expect(session.screen).not.toBeNull();

    // a long command, streamed: its output arrives while it runs; aborting kills it on the computer
    const marker = `tick-${Date.now()}`;
    const abort = new AbortController();
    const seen: ShellEvent[] = [];
    for await (const event of session.shell(`while :; do echo ${marker}; sleep 0.2; done`, {
      signal: abort.signal,
    })) {
      seen.push(event);
      if (seen.filter((e) => e.type === "stdout").length === 3) abort.abort();
    }
    expect(seen.slice(0, 3).map((e) => e.type)).toEqual(["stdout", "stdout", "stdout"]);
    expect(seen.at(-1)).toEqual({ type: "exit", code: 130, message: "aborted" });
    await until("the aborted command to be gone", async () => {
      // [t]ick: a pattern that does not match the pgrep's own command line
      const left = await session.run(`pgrep -f '[${marker[0]}]${marker.slice(1)}' || true`);
      return left.stdout.trim() === "" ? true : undefined;
    });
    expect(await session.run({ command: "echo out; echo err >&2; exit 7" })).toEqual({
      stdout: "out\n",
      stderr: "err\n",
      code: 7,
      truncated: false,
    });

    // the screen: a 1280x800 PNG, and input that moves the pointer where it was sent
    const shot = await session.observe();
    expect(pngSize(shot.png)).toEqual({ width: 1280, height: 800 });
    expect(shot).toMatchObject({ width: 1280, height: 800, screen: session.screen });
    expect(await session.act([{ type: "move", x: 321, y: 123 }])).toEqual({ completed: 1, total: 1 });
    expect((await session.observe()).cursor).toEqual({ x: 321, y: 123 });
    const refused = await session.act([{ type: "teleport" } as never]).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(CubicleError);
    expect(refused).toMatchObject({ status: 400, code: "INVALID_ACTIONS" });

    // files: bytes in and out, a streamed upload and a streamed download, a listing
    await session.writeFile("notes/hello.txt", "hello from the library");
    expect(await session.readText("notes/hello.txt")).toBe("hello from the library");
    await session.writeFile("notes/streamed.txt", streamOf(["one ", "two ", "three"]));
    expect(await text(await session.downloadFile("notes/streamed.txt"))).toBe("one two three");
    expect((await session.listFiles("notes")).items.map((entry) => entry.name)).toEqual([
      "hello.txt",
      "streamed.txt",
    ]);
    const missing = await session.readText("notes/absent.txt").catch((error: unknown) => error);
    expect(missing).toMatchObject({ status: 404 });

    // a checkpoint of the computer the session is on
    const checkpoint = await cubicle.takeCheckpoint(session.computerId);
    expect(checkpoint).toMatchObject({ computerId: session.computerId, reason: "manual" });
    expect(checkpoint.fileCount).toBeGreaterThan(0);
    expect((await cubicle.listCheckpoints(session.computerId)).map((c) => c.id)).toContain(checkpoint.id);

    // a view capability for the session's screen, its token kept out of the URL
    const capability = await session.screenUrl();
    expect(capability).toMatchObject({ mode: "view" });
    expect(capability.url).not.toContain(capability.token);

    expect(await session.end()).toMatchObject({ status: "ended", outcome: "success" });
    const stale = await session.observe().catch((error: unknown) => error);
    expect(stale).toMatchObject({ status: 409, code: "STALE_FENCE" });
  });

  it("gets a typed COMPUTER_BUSY naming the holder when the bot's session is live", {
    timeout: SLOW,
  }, async () => {
    const bot = await makeBot("Busy");
    const first = await memberClient().openSession(bot.id);
    const second = await memberClient()
      .openSession(bot.name)
      .catch((error: unknown) => error);
    expect(second).toBeInstanceOf(ComputerBusyError);
    const busy = second as ComputerBusyError;
    expect(busy).toMatchObject({ status: 409, code: "COMPUTER_BUSY" });
    expect(busy.holder).toMatchObject({ type: "api_key", name: "member robot", sessionId: first.id });
    expect(new Date(busy.holder.expiresAt).getTime()).toBeGreaterThan(Date.now());
    await first.end("failure");
    const third = await memberClient().openSession(bot.name);
    expect(third.fence).toBeGreaterThan(first.fence);
    await third.end();
  });

  it("keeps a session past its lease by heartbeating, and loses it a lease after the heartbeats stop", {
    timeout: SLOW,
  }, async () => {
    const lease = deployment().sessionLeaseMs;
    const bot = await makeBot("Heartbeat");
    const lost: CubicleError[] = [];
    const session: Session = await memberClient().openSession(bot.id, {
      onLost: (error) => lost.push(error),
    });
    const openedUntil = session.expiresAt.getTime();

    await sleep(lease * 1.25);
    // alive past its first lease: the helper's timer heartbeat it meanwhile
    expect(session.expiresAt.getTime()).toBeGreaterThan(openedUntil);
    expect((await session.run("echo alive")).stdout).toBe("alive\n");

    // the timer killed (as a crashed automation's would be): the lease runs out as designed
    session.stopHeartbeats();
    const expiry = session.expiresAt.getTime();
    await sleep(Math.max(0, expiry - Date.now()) + 1_000);
    const reclaimed = await memberClient().openSession(bot.id);
    expect(reclaimed.fence).toBeGreaterThan(session.fence);
    const stale = await session.run("echo late").catch((error: unknown) => error);
    expect(stale).toMatchObject({ status: 409, code: "STALE_FENCE" });
    expect(lost).toEqual([]);
    await reclaimed.end();
  });
});

describe("a workspace's events through the library", () => {
  it("follows a session's life in order, and resumes after an event without loss or repeats", {
    timeout: SLOW,
  }, async () => {
    const cubicle = memberClient();
    const bot = await makeBot("Events");
    const abort = new AbortController();
    let ready!: () => void;
    const following = new Promise<void>((resolve) => {
      ready = resolve;
    });
    const all: WorkspaceEvent[] = [];
    let sessionId = "";
    const read = (async () => {
      for await (const event of cubicle.events({ signal: abort.signal, onReady: ready })) {
        all.push(event);
        if (event.type === "session.ended" && event.target?.id === sessionId) abort.abort();
      }
    })();
    await following;
    const session = await cubicle.openSession(bot.id);
    sessionId = session.id;
    await session.end("failure");
    await read;
    const ofSession = all.filter((event) => event.target?.id === session.id);
    expect(ofSession.map((e) => e.type)).toEqual(["session.opened", "session.ended"]);
    expect(ofSession[1]).toMatchObject({
      target: { type: "session", id: session.id },
      data: { outcome: "failure" },
    });

    // from the opening on: the end comes next, once
    const opened = ofSession[0]?.id;
    const again = new AbortController();
    const resumed: WorkspaceEvent[] = [];
    for await (const event of cubicle.events({ lastEventId: opened, signal: again.signal })) {
      if (event.target?.id === session.id) resumed.push(event);
      if (event.id === ofSession[1]?.id) again.abort();
    }
    expect(resumed.map((e) => e.id)).toEqual([ofSession[1]?.id]);

    const refused = await (async () => {
      for await (const _ of cubicle.events({ lastEventId: "not-an-id" })) return "an event";
    })().catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 400, code: "INVALID_EVENT_ID" });
  });
});
