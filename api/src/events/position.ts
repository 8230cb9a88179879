import { HttpProblem } from "../http/problem.ts";

/**
 * Where an event stands in the stream: the event epoch it belongs to (epochs.ts), its
 * transaction's id (xid8, kept as the decimal string the drivers return) and its audit id.
 * Clients see it as one opaque SSE id, `<epoch>-<xact>-<id>`.
 */
export interface Position {
  epoch: number;
  xact: string;
  id: number;
}

/** Before every event of `epoch`. */
export const originOf = (epoch: number): Position => ({ epoch, xact: "0", id: 0 });

export const encodePosition = (position: Position): string =>
  `${position.epoch}-${position.xact}-${position.id}`;

/**
 * Epochs are a serial (int4); xid8 is 64 bits (20 digits at most); audit ids stay below 2^53 (16
 * digits). `<xact>-<id>`, the ids given out before epochs existed, are positions of epoch 0.
 */
const FORMAT = /^(?:(0|[1-9]\d{0,9})-)?(0|[1-9]\d{0,19})-(0|[1-9]\d{0,15})$/;
const EPOCH_MAX = 2 ** 31 - 1;
const XID8_MAX = 2n ** 64n - 1n;

export const invalidEventId = () =>
  new HttpProblem(
    400,
    "INVALID_EVENT_ID",
    "Last-Event-ID (or lastEventId) must be the id of an event this stream sent, like 3-7412-318.",
  );

/**
 * An id the stream gave out, as far as its form goes; anything else is refused before the stream
 * starts. Whether its epoch exists is for `startOf` (epochs.ts) to say.
 */
export function decodePosition(text: string): Position {
  const [, epoch = "0", xact, id] = FORMAT.exec(text) ?? [];
  if (
    !xact ||
    !id ||
    Number(epoch) > EPOCH_MAX ||
    BigInt(xact) > XID8_MAX ||
    !Number.isSafeInteger(Number(id))
  )
    throw invalidEventId();
  return { epoch: Number(epoch), xact, id: Number(id) };
}
