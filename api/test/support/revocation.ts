import { expect } from "vitest";
import type { OpenedScreen } from "./screen-socket.ts";

/** The close code of a socket whose access was taken away (the proxy's CLOSE.accessRevoked). */
export const ACCESS_REVOKED = 4004;
/** The close code of a control socket whose lease ended (CLOSE.controlEnded). */
export const CONTROL_ENDED = 4001;

/**
 * Runs the change that takes access away, then expects each socket closed with 4004 (or one of
 * `codes`) within a second of the change's answer (the change has committed by then).
 */
export async function expectClosedWithinASecond(
  sockets: OpenedScreen[],
  change: () => Promise<void>,
  codes: number[] = [ACCESS_REVOKED],
) {
  await change();
  const changed = Date.now();
  const closes = await Promise.all(
    sockets.map((socket) =>
      Promise.race([
        socket.closed.then((code) => ({ code, after: Date.now() - changed })),
        new Promise<{ code: "still open" }>((resolve) =>
          setTimeout(() => resolve({ code: "still open" }), 3_000),
        ),
      ]),
    ),
  );
  for (const close of closes) expect(codes).toContain(close.code);
  for (const close of closes) if ("after" in close) expect(close.after).toBeLessThanOrEqual(1_000);
}

/** Still relaying: after a second more, a fresh update still arrives. */
export async function expectStillLive(sockets: OpenedScreen[]) {
  let closed = 0;
  for (const socket of sockets)
    void socket.closed.then(() => {
      closed++;
    });
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  expect(closed).toBe(0);
  for (const socket of sockets) {
    socket.rfb.requestUpdate({ x: 0, y: 0, width: 16, height: 16 });
    expect((await socket.rfb.readUpdate()).length).toBeGreaterThan(0);
    socket.ws.close();
  }
}
