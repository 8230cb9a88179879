/**
 * What the emulator knows about a sandbox lives on its container, as labels, so an emulator that
 * starts again (same instance) adopts its sandboxes. Labels cannot change after creation, so what
 * changes is derived: the state from the container's, the preview token from its start time.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { type Machines, mapLabel } from "../machines/index.ts";
import type { NetworkSettings } from "./network.ts";

const LABEL = {
  sandboxId: "cubicle.daytona.sandbox-id",
  name: "cubicle.daytona.name",
  labels: "cubicle.daytona.labels",
  env: "cubicle.daytona.env",
  public: "cubicle.daytona.public",
  target: "cubicle.daytona.target",
  autoStopInterval: "cubicle.daytona.auto-stop-interval",
  autoArchiveInterval: "cubicle.daytona.auto-archive-interval",
  autoDeleteInterval: "cubicle.daytona.auto-delete-interval",
  secret: "cubicle.daytona.secret",
} as const;

export interface SandboxRecord {
  sandboxId: string;
  name: string;
  /** The sandbox's labels as Daytona keeps them (not the container's). */
  labels: Record<string, string>;
  env: Record<string, string>;
  public: boolean;
  target: string;
  /** Minutes without activity before Daytona stops it; 0 never. */
  autoStopInterval: number;
  autoArchiveInterval: number;
  /** Minutes after a stop before Daytona deletes it; 0 at once, negative never. */
  autoDeleteInterval: number;
  /** Keys the sandbox's preview tokens, each a function of one start of the container. */
  secret: string;
}

export function labelsOf(record: SandboxRecord): Record<string, string> {
  return {
    [LABEL.sandboxId]: record.sandboxId,
    [LABEL.name]: record.name,
    [LABEL.labels]: JSON.stringify(record.labels),
    [LABEL.env]: JSON.stringify(record.env),
    [LABEL.public]: String(record.public),
    [LABEL.target]: record.target,
    [LABEL.autoStopInterval]: String(record.autoStopInterval),
    [LABEL.autoArchiveInterval]: String(record.autoArchiveInterval),
    [LABEL.autoDeleteInterval]: String(record.autoDeleteInterval),
    [LABEL.secret]: record.secret,
  };
}

/** The record a container's labels hold; null when they are not a sandbox's. */
export function recordOf(labels: Record<string, string>): SandboxRecord | null {
  const sandboxId = labels[LABEL.sandboxId];
  const secret = labels[LABEL.secret];
  if (!sandboxId || !secret) return null;
  const minutes = (label: string, fallback: number) => {
    const value = Number(labels[label]);
    return Number.isFinite(value) ? value : fallback;
  };
  return {
    sandboxId,
    name: labels[LABEL.name] || sandboxId,
    labels: mapLabel(labels[LABEL.labels]),
    env: mapLabel(labels[LABEL.env]),
    public: labels[LABEL.public] === "true",
    target: labels[LABEL.target] ?? "",
    autoStopInterval: minutes(LABEL.autoStopInterval, 0),
    autoArchiveInterval: minutes(LABEL.autoArchiveInterval, 0),
    autoDeleteInterval: minutes(LABEL.autoDeleteInterval, -1),
    secret,
  };
}

/**
 * A sandbox's network settings change, so they live in a root-only file on its disk, where an
 * emulator that starts again finds them. The sandbox user may become root, so the file carries a
 * MAC keyed by the record's secret (a label, out of the sandbox's reach): settings changed from
 * inside are not taken, and the sandbox is then blocked rather than opened.
 */
const NETWORK_PATH = "/var/lib/cubicle-daytona/network.json";

const macOf = (secret: string, settings: string) =>
  createHmac("sha256", secret).update(settings).digest("base64url");

export async function saveNetwork(
  machines: Machines,
  containerId: string,
  record: SandboxRecord,
  network: NetworkSettings,
): Promise<void> {
  const settings = JSON.stringify(network);
  const file = JSON.stringify({ settings, mac: macOf(record.secret, settings) });
  await machines.putFile(containerId, NETWORK_PATH, Buffer.from(file));
}

/** The settings saved on the sandbox's disk; block-all when they are missing or were tampered with. */
export async function loadNetwork(
  machines: Machines,
  containerId: string,
  record: SandboxRecord,
): Promise<NetworkSettings> {
  const data = await machines.getFile(containerId, NETWORK_PATH);
  return (data && verified(data, record.secret)) ?? { networkBlockAll: true };
}

function verified(data: Buffer, secret: string): NetworkSettings | null {
  try {
    const { settings, mac } = JSON.parse(data.toString("utf8")) as { settings: string; mac: string };
    const expected = Buffer.from(macOf(secret, settings));
    const given = Buffer.from(String(mac));
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return null;
    return JSON.parse(settings) as NetworkSettings;
  } catch {
    return null;
  }
}
