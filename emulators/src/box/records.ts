/**
 * What the emulator knows about a box lives on its container, so an emulator that starts again
 * (same instance) adopts its boxes. What never changes is in labels; what a box's owner changes
 * (name, TTL, noEnv on resume, …) is in a root-only file on the container's disk, written and read
 * through the engine's archive API, which reaches an archived (stopped) box's disk too.
 */
import { randomBytes, randomInt } from "node:crypto";
import type { Machines } from "../machines/index.ts";

const LABEL = {
  boxId: "cubicle.box.box-id",
  secret: "cubicle.box.secret",
} as const;

/** Outside the user's home and /tmp, so the box's own commands neither see it in passing nor trip on it. */
const SETTINGS_PATH = "/var/lib/cubicle-box/box.json";

export interface BoxRecord {
  boxId: string;
  /** Keys what the box hands out per boot: the desktop token, the VNC password, the fake account token. */
  secret: string;
}

export type BoxType = "small" | "default" | "large";

/** What a box's owner can change, kept on the box's disk. */
export interface BoxSettings {
  name: string;
  type: BoxType;
  /** Seconds from create/resume/PATCH to the automatic archive; null never. */
  ttlSeconds: number | null;
  /** When the TTL runs out (ISO); null while archived or without a TTL. */
  archiveAfter: string | null;
  noEnv: boolean;
  /** The box's own environment variables (never the reserved ones). */
  env: Record<string, string>;
  /** Set by the first completed archive: a resume restores from it. */
  snapshotCompletedAt: string | null;
}

/** Box's id alphabet: no 0, 1, i, l, o. */
const ID_ALPHABET = "23456789abcdefghjkmnpqrstuvwxyz";

export function newBoxId(): string {
  let id = "bx_";
  for (let i = 0; i < 8; i++) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
  return id;
}

export function newRecord(boxId: string): BoxRecord {
  return { boxId, secret: randomBytes(24).toString("base64url") };
}

export function labelsOf(record: BoxRecord): Record<string, string> {
  return { [LABEL.boxId]: record.boxId, [LABEL.secret]: record.secret };
}

/** The record a container's labels hold; null when they are not a box's. */
export function recordOf(labels: Record<string, string>): BoxRecord | null {
  const boxId = labels[LABEL.boxId];
  const secret = labels[LABEL.secret];
  return boxId && secret ? { boxId, secret } : null;
}

export async function saveSettings(machines: Machines, containerId: string, settings: BoxSettings) {
  await machines.putFile(containerId, SETTINGS_PATH, Buffer.from(JSON.stringify(settings)));
}

/** The settings on the box's disk; `fallback` when they are missing or damaged. */
export async function loadSettings(
  machines: Machines,
  containerId: string,
  fallback: BoxSettings,
): Promise<BoxSettings> {
  const data = await machines.getFile(containerId, SETTINGS_PATH);
  if (!data) return fallback;
  try {
    const parsed = JSON.parse(data.toString("utf8")) as Partial<BoxSettings>;
    return { ...fallback, ...parsed };
  } catch {
    return fallback;
  }
}
