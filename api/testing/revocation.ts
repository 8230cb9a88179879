import { expect } from "vitest";
import type { OpenedScreen } from "./screen-socket.ts";

/** The close code of a socket whose access was taken away (the proxy's CLOSE.accessRevoked). */
export const ACCESS_REVOKED = 4004;
/** The close code of a control socket whose lease ended (CLOSE.controlEnded). */
export const CONTROL_ENDED = 4001;

/**
 * How long a socket may take to close once access is gone. A bound on liveness, not a speed target
 * (how fast revocation is belongs to bench/): nothing but the proxy hearing the change closes these
 * sockets before their 15-minute idle timeout, so closing at all proves the change was heard.
 */
export const REVOCATION_PATIENCE_MS = 10_000;

/** Runs the change that takes access away, then expects each socket closed with 4004 (or one of `codes`). */
export async function expectClosedByTheChange(
  sockets: OpenedScreen[],
  change: () => Promise<void>,
  codes: number[] = [ACCESS_REVOKED],
) {
  await change();
  const closes = await Promise.all(
    sockets.map((socket) =>
      Promise.race([
        socket.closed,
        new Promise<string>((resolve) => setTimeout(() => resolve("still open"), REVOCATION_PATIENCE_MS)),
      ]),
    ),
  );
  for (const code of closes) expect(codes).toContain(code);
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
