import { HttpProblem } from "../http/problem.ts";

/**
 * Where an event stands in the stream: its transaction's id (xid8, kept as the decimal string the
 * drivers return) and its audit id. Clients see it as one opaque SSE id, `<xact>-<id>`.
 */
export interface Position {
  xact: string;
  id: number;
}

/** Before every event recorded with a position. */
export const ORIGIN: Position = { xact: "0", id: 0 };

export const encodePosition = (position: Position): string => `${position.xact}-${position.id}`;

/** xid8 is 64 bits (20 digits at most); audit ids stay below 2^53 (16 digits). */
const FORMAT = /^(0|[1-9]\d{0,19})-(0|[1-9]\d{0,15})$/;
const XID8_MAX = 2n ** 64n - 1n;

/** An id the stream gave out; anything else is refused before the stream starts. */
export function decodePosition(text: string): Position {
  const match = FORMAT.exec(text);
  const [, xact, id] = match ?? [];
  if (!xact || !id || BigInt(xact) > XID8_MAX || !Number.isSafeInteger(Number(id)))
    throw new HttpProblem(
      400,
      "INVALID_EVENT_ID",
      "Last-Event-ID (or lastEventId) must be the id of an event this stream sent, like 1234-56.",
    );
  return { xact, id: Number(id) };
}
