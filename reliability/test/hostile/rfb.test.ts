import { setTimeout as sleep } from "node:timers/promises";
import { machineFor } from "@cubicle/api/testing/computers";
import { type OpenedScreen, openScreenSocket } from "@cubicle/api/testing/screen-socket";
import { CapabilityKeyring, mintCapability } from "@cubicle/proxy/capability";
import { ClientMessageType, type RfbClient } from "@cubicle/proxy/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tally } from "../../src/tally.ts";
import { type ScreenStack, startScreenStack } from "./support/screen-proxy.ts";
import { type RecordingRelay, startRecordingRelay } from "./testing/recording-relay.ts";

/**
 * A hostile browser's RFB on view sockets of the real proxy, in front of the real x11vnc of a
 * desktop computer. Between the proxy and x11vnc a relay keeps every byte the proxy sends, so
 * "never reached the computer" is read at the computer's door, not from the proxy's own account.
 */
let stack: ScreenStack;
let relay: RecordingRelay;
let tappedToken: () => Promise<string>;

beforeAll(async () => {
  stack = await startScreenStack("hostile-rfb");
  const { provider, ref } = await machineFor(stack.t, stack.computer);
  const view = await provider.openScreen(ref, 0);
  if (view.kind !== "vnc") throw new Error("the desktop provider gives VNC targets");
  relay = await startRecordingRelay(view);
  const keyring = new CapabilityKeyring({ current: stack.key });
  // api seals the screen's own address into what it mints; this is the same grant for the
  // workspace's viewer, sealed with the shared key to the relay in front of that screen
  tappedToken = async () =>
    (await mintCapability(keyring, stack.viewGrant({ ...view, port: relay.port }))).token;
});

afterAll(async () => {
  await relay?.close();
  await stack?.close();
});

/** The proxy's side of an RFB 3.8 handshake with VNC Authentication: version, security type, response, ClientInit. */
const HANDSHAKE_BYTES = 12 + 1 + 16 + 1;

interface TappedScreen extends OpenedScreen {
  /** What the proxy sent x11vnc on this socket after the handshake. */
  reachedComputer(): Buffer;
}

async function openTapped(): Promise<TappedScreen> {
  const before = relay.connections.length;
  const screen = await openScreenSocket(stack.proxy.url, await tappedToken());
  const received = relay.connections[before];
  if (!received || relay.connections.length !== before + 1)
    throw new Error("open tapped sockets one at a time");
  const handshake = Buffer.concat(received).subarray(0, HANDSHAKE_BYTES);
  expect(handshake.subarray(0, 12).toString("latin1")).toBe("RFB 003.008\n");
  return { ...screen, reachedComputer: () => Buffer.concat(received).subarray(HANDSHAKE_BYTES) };
}

const u16 = (n: number) => [(n >>> 8) & 0xff, n & 0xff];
const u32 = (n: number) => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
const message = (...parts: (number | number[] | Buffer)[]) =>
  Buffer.concat(parts.map((part) => (Buffer.isBuffer(part) ? part : Buffer.from([part].flat()))));

const fbur = (incremental: boolean, x: number, y: number, width: number, height: number) =>
  message(
    ClientMessageType.FramebufferUpdateRequest,
    incremental ? 1 : 0,
    u16(x),
    u16(y),
    u16(width),
    u16(height),
  );
/** A request for one pixel no other request asks for: its answer proves everything before it was handled. */
const MARKER = fbur(false, 7, 5, 1, 1);
const RAW_ONLY = message(ClientMessageType.SetEncodings, 0, u16(1), u32(0));

/** Waits for the marker's answer, skipping any other update x11vnc sends meanwhile. */
async function markerAnswered(rfb: RfbClient): Promise<void> {
  for (let updates = 0; updates < 50; updates++) {
    const rectangles = await rfb.readUpdate();
    if (rectangles.some((r) => r.x <= 7 && r.y <= 5 && r.x + r.width > 7 && r.y + r.height > 5)) return;
  }
  throw new Error("the marker was never answered");
}

async function droppedSoFar(): Promise<number> {
  const text = await stack.proxy.metrics.registry.getSingleMetricAsString(
    "cubicle_proxy_dropped_input_messages_total",
  );
  return Number(/ (\d+)$/m.exec(text)?.[1] ?? 0);
}

/** How the socket closed, or that it had not within `ms`. */
function closeWithin(screen: OpenedScreen, ms: number) {
  return Promise.race([screen.closedWith, sleep(ms).then(() => ({ code: 0, reason: "still open" }))]);
}

/** One sample of every input-bearing client message: none may reach the computer from a view socket. */
const INPUTS: { name: string; bytes: Buffer }[] = [
  { name: "KeyEvent", bytes: message(ClientMessageType.KeyEvent, 1, [0, 0], u32(0xff0d)) },
  { name: "PointerEvent", bytes: message(ClientMessageType.PointerEvent, 1, u16(100), u16(200)) },
  {
    name: "ClientCutText",
    bytes: message(ClientMessageType.ClientCutText, [0, 0, 0], u32(5), Buffer.from("hello")),
  },
  {
    name: "ClientCutText (extended)",
    bytes: message(ClientMessageType.ClientCutText, [0, 0, 0], u32(-8 >>> 0), u32(0x10000001), u32(0)),
  },
  { name: "xvp", bytes: message(ClientMessageType.Xvp, 0, 1, 2) },
  {
    name: "SetDesktopSize",
    bytes: message(
      ClientMessageType.SetDesktopSize,
      0,
      u16(640),
      u16(480),
      1,
      0,
      u32(0),
      u16(0),
      u16(0),
      u16(640),
      u16(480),
      u32(0),
    ),
  },
  { name: "gii (little endian)", bytes: message(ClientMessageType.Gii, 0x01, [4, 0], u32(0)) },
  { name: "gii (big endian)", bytes: message(ClientMessageType.Gii, 0x81, u16(4), u32(0)) },
  {
    name: "QEMU extended key event",
    bytes: message(ClientMessageType.Qemu, 0, u16(1), u32(0x61), u32(0x1e)),
  },
  { name: "QEMU audio enable", bytes: message(ClientMessageType.Qemu, 1, u16(0)) },
  { name: "QEMU audio disable", bytes: message(ClientMessageType.Qemu, 1, u16(1)) },
  { name: "QEMU audio format", bytes: message(ClientMessageType.Qemu, 1, u16(2), 3, 2, u32(44100)) },
];

describe("hostile: rfb", () => {
  it("frames messages split and merged at every byte boundary: input dropped, the rest reaches x11vnc intact", async (context) => {
    const counts = tally(context, "hostile: rfb");
    // A cycle of every input message between two that may pass; each cycle is split at a
    // different byte, and each frame carries one cycle's tail with the next cycle's head.
    const allowed = [RAW_ONLY, fbur(true, 0, 0, 16, 16)];
    const cycle = Buffer.concat([allowed[0] as Buffer, ...INPUTS.map((i) => i.bytes), allowed[1] as Buffer]);
    const perCycle = Buffer.concat(allowed);
    const stream = Buffer.concat(Array(cycle.length).fill(cycle));
    const splitAtEveryByte = Array.from({ length: cycle.length }, (_, j) =>
      stream.subarray(
        j * cycle.length + j,
        j + 1 < cycle.length ? (j + 1) * cycle.length + j + 1 : stream.length,
      ),
    );
    const arrangements = {
      "split at every byte, merged across cycles": { frames: splitAtEveryByte, cycles: cycle.length },
      "one byte per frame": { frames: [...cycle].map((byte) => Buffer.from([byte])), cycles: 1 },
      "every cycle in one frame": { frames: [stream], cycles: cycle.length },
    };
    for (const [name, { frames, cycles }] of Object.entries(arrangements)) {
      const screen = await openTapped();
      const droppedBefore = await droppedSoFar();
      for (const frame of frames) screen.ws.send(frame);
      screen.ws.send(MARKER);
      await markerAnswered(screen.rfb);
      counts.tried(INPUTS.length * cycles);
      const dropped = (await droppedSoFar()) - droppedBefore;
      expect.soft(dropped, name).toBe(INPUTS.length * cycles);
      // byte for byte: the messages that may pass, whole and in order, and not one byte of input
      const intact = screen
        .reachedComputer()
        .equals(Buffer.concat([...Array(cycles).fill(perCycle), MARKER]));
      expect.soft(intact, `${name}: what reached x11vnc`).toBe(true);
      if (intact) counts.refused(Math.min(dropped, INPUTS.length * cycles));
      screen.ws.close();
    }
    counts.lost(await stack.stillServes());
  });

  it("drops every variant of every input-bearing message on a view socket, and keeps the socket", async (context) => {
    const counts = tally(context, "hostile: rfb");
    const keysyms = [
      ...Array.from({ length: 26 }, (_, i) => 0x61 + i),
      0xff0d,
      0xff1b,
      0xffe3,
      0xffe9,
      0xffeb,
      0xff08,
      0xffff,
      0xffbe,
      0xffc9,
      0x0,
      0xffffffff,
    ];
    const variants: Record<string, Buffer[]> = {
      KeyEvent: keysyms.flatMap((key) => [0, 1, 255].map((down) => message(4, down, [0, 0], u32(key)))),
      PointerEvent: [0, 1, 2, 4, 8, 16, 128, 255].flatMap((mask) =>
        [
          [0, 0],
          [640, 400],
          [1279, 799],
          [65535, 65535],
        ].map(([x = 0, y = 0]) => message(5, mask, u16(x), u16(y))),
      ),
      ClientCutText: [0, 1, 255, 4096, 200_000].map((length) =>
        message(6, [0, 0, 0], u32(length), Buffer.alloc(length, 0x78)),
      ),
      "ClientCutText (extended)": [4, 8, 1_000].map((length) =>
        message(6, [0, 0, 0], u32(-length >>> 0), u32(0x10000001), Buffer.alloc(length - 4)),
      ),
      xvp: [0, 1, 2, 3, 4, 255].map((code) => message(250, 0, 1, code)),
      SetDesktopSize: [0, 1, 16, 255].map((screens) =>
        message(251, 0, u16(1), u16(1), screens, 0, Buffer.alloc(16 * screens, 1)),
      ),
      gii: [0x01, 0x02, 0x81, 0x82, 0x80, 0x00].flatMap((subtype) =>
        [0, 4, 1000].map((length) =>
          message(
            253,
            subtype,
            subtype & 0x80 ? u16(length) : [length & 0xff, length >>> 8],
            Buffer.alloc(length),
          ),
        ),
      ),
      QEMU: [
        ...[0, 0x61, 0xffffffff].map((key) => message(255, 0, u16(1), u32(key), u32(0x1e))),
        message(255, 1, u16(0)),
        message(255, 1, u16(1)),
        message(255, 1, u16(2), 5, 2, u32(0xffffffff)),
      ],
    };
    for (const [name, messages] of Object.entries(variants)) {
      const screen = await openTapped();
      const droppedBefore = await droppedSoFar();
      for (const bytes of messages) screen.ws.send(bytes);
      screen.ws.send(MARKER);
      await markerAnswered(screen.rfb);
      counts.tried(messages.length);
      const dropped = (await droppedSoFar()) - droppedBefore;
      const reached = screen.reachedComputer();
      expect.soft({ dropped, reached: reached.toString("hex") }, name).toEqual({
        dropped: messages.length,
        reached: MARKER.toString("hex"),
      });
      if (reached.equals(MARKER)) counts.refused(Math.min(dropped, messages.length));
      expect.soft(await closeWithin(screen, 0), name).toEqual({ code: 0, reason: "still open" });
      screen.ws.close();
    }
    counts.lost(await stack.stillServes());
  });

  it("closes a view socket with 1008 on a huge length, before any of it reaches x11vnc", async (context) => {
    const counts = tally(context, "hostile: rfb");
    const tooLarge = { code: 1008, reason: "message too large" };
    const violation = { code: 1008, reason: "protocol violation" };
    const cutText = (length: number) => message(6, [0, 0, 0], u32(length), Buffer.alloc(64, 0x03));
    const cases: { name: string; bytes: Buffer; closed: { code: number; reason: string } }[] = [
      // read as a signed length, 0xFFFFFFFF is an extended-clipboard message of 1 byte, too short for its flags
      { name: "ClientCutText of 4 GiB - 1", bytes: cutText(0xffffffff), closed: violation },
      { name: "ClientCutText of 4 GiB - 3", bytes: cutText(0xfffffffd), closed: violation },
      { name: "ClientCutText of 2 GiB", bytes: cutText(0x80000000), closed: tooLarge },
      { name: "ClientCutText of 2 GiB - 1", bytes: cutText(0x7fffffff), closed: tooLarge },
      { name: "ClientCutText of 256 KiB + 1", bytes: cutText(256 * 1024 + 1 - 8), closed: tooLarge },
      { name: "extended ClientCutText of 2 GiB - 1", bytes: cutText(-0x7fffffff >>> 0), closed: tooLarge },
      {
        name: "ClientFence with a 255-byte payload",
        bytes: message(248, [0, 0, 0], u32(0), 255),
        closed: violation,
      },
      {
        name: "one WebSocket frame of 256 KiB + 1",
        bytes: Buffer.alloc(256 * 1024 + 1, 3),
        closed: tooLarge,
      },
    ];
    for (const { name, bytes, closed } of cases) {
      const screen = await openTapped();
      screen.ws.send(bytes);
      counts.tried();
      const got = { ...(await closeWithin(screen, 3_000)), reached: screen.reachedComputer().length };
      expect.soft(got, name).toEqual({ ...closed, reached: 0 });
      if (got.code === closed.code && got.reason === closed.reason && got.reached === 0) counts.refused();
      screen.ws.terminate();
    }
    counts.lost(await stack.stillServes());
  });

  it("closes a view socket with 1008 on every unknown message type, while a viewer beside it carries on", async (context) => {
    const counts = tally(context, "hostile: rfb");
    const known = new Set<number>(Object.values(ClientMessageType));
    // x11vnc takes a new client about every 120 ms, so not all 244: the types registered for RFB
    // extensions the proxy does not frame (7 to 15 among them: file transfer, scaling, server
    // input, text chat), the neighbours of every type it does, and one in every eight besides.
    const registered = [1, 7, 8, 9, 10, 11, 12, 13, 15, 127, 128, 173, 252, 254];
    const neighbours = [...known].flatMap((type) => [type - 1, type + 1]);
    const everyEighth = Array.from({ length: 32 }, (_, i) => i * 8 + 1);
    const unknown = [
      ...[...new Set([...registered, ...neighbours, ...everyEighth])]
        .filter((type) => type >= 0 && type <= 255 && !known.has(type))
        .sort((a, b) => a - b)
        .map((type) => ({ name: `type ${type}`, bytes: message(type, Buffer.alloc(15, 0x01)) })),
      ...[2, 3, 128, 255].map((subtype) => ({
        name: `QEMU subtype ${subtype}`,
        bytes: message(255, subtype, Buffer.alloc(14, 0x01)),
      })),
      ...[3, 0xffff].map((operation) => ({
        name: `QEMU audio operation ${operation}`,
        bytes: message(255, 1, u16(operation), Buffer.alloc(12, 0x01)),
      })),
    ];
    const bystander = await openScreenSocket(stack.proxy.url, await stack.mintView());
    const violation = { code: 1008, reason: "protocol violation" };
    const wrong: string[] = [];
    // Each needs a socket and an RFB session of its own, since its first message closes it: a
    // dozen at a time, within the subject's socket limit beside the bystander.
    const AT_ONCE = 12;
    for (let start = 0; start < unknown.length; start += AT_ONCE) {
      const batch = unknown.slice(start, start + AT_ONCE);
      const firstConnection = relay.connections.length;
      const screens = await Promise.all(
        batch.map(async () => openScreenSocket(stack.proxy.url, await tappedToken())),
      );
      const results = await Promise.all(
        batch.map(async ({ name, bytes }, i) => {
          const screen = screens[i] as OpenedScreen;
          screen.ws.send(bytes);
          const got = await closeWithin(screen, 3_000);
          screen.ws.terminate();
          return { name, got };
        }),
      );
      counts.tried(batch.length);
      // which relay connection is whose is not known here, only that these are the batch's
      const reached = relay.connections
        .slice(firstConnection)
        .map((received) => Buffer.concat(received).length - HANDSHAKE_BYTES);
      expect(reached, `what reached x11vnc from ${batch.map((c) => c.name).join(", ")}`).toEqual(
        batch.map(() => 0),
      );
      for (const { name, got } of results) {
        if (got.code === violation.code && got.reason === violation.reason) counts.refused();
        else wrong.push(`${name}: ${JSON.stringify(got)}`);
      }
    }
    expect(wrong).toEqual([]);
    const missing = await stack.stillServes();
    try {
      bystander.rfb.requestUpdate({ x: 0, y: 0, width: 8, height: 8 });
      expect((await bystander.rfb.readUpdate()).length).toBeGreaterThan(0);
    } catch {
      missing.push("a viewer open beside the hostile sockets was cut");
    }
    bystander.ws.close();
    counts.lost(missing);
  });
});
