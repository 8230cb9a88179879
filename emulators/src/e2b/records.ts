/**
 * What the emulator knows about a sandbox lives on its container, as labels, so an emulator that
 * starts again (same instance) adopts its sandboxes instead of losing them. Only the timeout's
 * deadline is kept in memory; adoption arms it afresh.
 */
import { mapLabel } from "../machines/index.ts";

const LABEL = {
  sandboxId: "cubicle.e2b.sandbox-id",
  templateId: "cubicle.e2b.template-id",
  metadata: "cubicle.e2b.metadata",
  envdAccessToken: "cubicle.e2b.envd-access-token",
  trafficAccessToken: "cubicle.e2b.traffic-access-token",
  autoPause: "cubicle.e2b.auto-pause",
  autoPauseMemory: "cubicle.e2b.auto-pause-memory",
  timeoutSeconds: "cubicle.e2b.timeout-seconds",
} as const;

export interface SandboxRecord {
  sandboxId: string;
  templateId: string;
  metadata: Record<string, string>;
  envdAccessToken: string;
  /** Set when the sandbox was made with network.allowPublicTraffic false: its ports then need it. */
  trafficAccessToken: string | null;
  /** What the timeout does: pause (true) or kill. */
  autoPause: boolean;
  /** Whether a timeout pause keeps memory (processes); false keeps only the disk. */
  autoPauseMemory: boolean;
  /** The timeout asked for at creation, armed again when an emulator adopts the sandbox. */
  timeoutSeconds: number;
}

export function labelsOf(record: SandboxRecord): Record<string, string> {
  return {
    [LABEL.sandboxId]: record.sandboxId,
    [LABEL.templateId]: record.templateId,
    [LABEL.metadata]: JSON.stringify(record.metadata),
    [LABEL.envdAccessToken]: record.envdAccessToken,
    ...(record.trafficAccessToken ? { [LABEL.trafficAccessToken]: record.trafficAccessToken } : {}),
    [LABEL.autoPause]: String(record.autoPause),
    [LABEL.autoPauseMemory]: String(record.autoPauseMemory),
    [LABEL.timeoutSeconds]: String(record.timeoutSeconds),
  };
}

/** The record a container's labels hold; null when they are not a sandbox's (or are damaged). */
export function recordOf(labels: Record<string, string>): SandboxRecord | null {
  const sandboxId = labels[LABEL.sandboxId];
  const envdAccessToken = labels[LABEL.envdAccessToken];
  const timeoutSeconds = Number(labels[LABEL.timeoutSeconds]);
  if (!sandboxId || !envdAccessToken || !Number.isFinite(timeoutSeconds)) return null;
  return {
    sandboxId,
    templateId: labels[LABEL.templateId] ?? "desktop",
    metadata: mapLabel(labels[LABEL.metadata]),
    envdAccessToken,
    trafficAccessToken: labels[LABEL.trafficAccessToken] ?? null,
    autoPause: labels[LABEL.autoPause] === "true",
    autoPauseMemory: labels[LABEL.autoPauseMemory] !== "false",
    timeoutSeconds,
  };
}
