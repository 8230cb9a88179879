import type { ReactNode } from "react";
import { type Bot, useBots } from "@/bots/queries.ts";
import { type Computer, computerName, useComputers } from "@/computers/queries.ts";
import { exactTime, formatBytes } from "@/ui/format.ts";
import { formatClock } from "./playback.ts";
import type { Recording } from "./queries.ts";

const KIND_LABELS: Record<Recording["kind"], string> = {
  control: "Take-over",
  session: "Bot session",
};

/** Who the recording shows at work: the person who took control, or the bot (and who ran it). */
function recordingWho(recording: Recording, bots: readonly Bot[] | undefined): string {
  if (recording.kind === "control") return recording.actor.name;
  const bot = bots?.find((one) => one.id === recording.botId)?.name ?? "A bot";
  return `${bot} (run by ${recording.actor.name})`;
}

/** "Team Computer · screen 1" (a computer since removed shows by its id). */
function recordingWhere(recording: Recording, computers: readonly Computer[] | undefined): string {
  const computer = computers?.find((one) => one.id === recording.computerId);
  return `${computer ? computerName(computer) : `Computer ${recording.computerId.slice(0, 8)}`} · screen ${recording.screen}`;
}

const recordingLength = (recording: Recording) => formatClock(recording.durationMs);

/** Complete, still recording, or incomplete with its reason in words. */
function RecordingStatus({ recording }: { recording: Recording }) {
  if (recording.status === "complete") return <span className="badge ok">Complete</span>;
  if (recording.status === "recording") return <span className="badge warn">● Recording now</span>;
  return (
    <span>
      <span className="badge danger">Incomplete</span>
      {recording.incompleteReason ? <span className="small muted"> {recording.incompleteReason}</span> : null}
    </span>
  );
}

/** A recording as the list and its page tell it: kind, who, where, when, how long, size and status. */
export interface RecordingFacts {
  kind: string;
  who: string;
  where: string;
  started: string;
  length: string;
  size: string;
  status: ReactNode;
}

/**
 * The facts of the workspace's recordings, naming bots and computers from the workspace's (archived
 * bots and removed computers too); also the computers, for whatever else the caller names.
 */
export function useRecordingFacts(workspaceId: string): {
  computers: readonly Computer[] | undefined;
  factsOf: (recording: Recording) => RecordingFacts;
} {
  const computers = useComputers(workspaceId);
  const bots = useBots(workspaceId, true);
  return {
    computers: computers.data,
    factsOf: (recording) => ({
      kind: KIND_LABELS[recording.kind],
      who: recordingWho(recording, bots.data),
      where: recordingWhere(recording, computers.data),
      started: recording.startedAt ? exactTime(recording.startedAt) : "not started",
      length: recordingLength(recording),
      size: formatBytes(recording.bytes),
      status: <RecordingStatus recording={recording} />,
    }),
  };
}
