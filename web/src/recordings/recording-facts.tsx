import type { Bot } from "@/bots/queries.ts";
import { type Computer, computerName } from "@/computers/queries.ts";
import { formatClock } from "./playback.ts";
import type { Recording } from "./queries.ts";

export const KIND_LABELS: Record<Recording["kind"], string> = {
  control: "Take-over",
  session: "Bot session",
};

/** Who the recording shows at work: the person who took control, or the bot (and who ran it). */
export function recordingWho(recording: Recording, bots: readonly Bot[] | undefined): string {
  if (recording.kind === "control") return recording.actor.name;
  const bot = bots?.find((one) => one.id === recording.botId)?.name ?? "A bot";
  return `${bot} (run by ${recording.actor.name})`;
}

/** "Team Computer · screen 1" (a computer since removed shows by its id). */
export function recordingWhere(recording: Recording, computers: readonly Computer[] | undefined): string {
  const computer = computers?.find((one) => one.id === recording.computerId);
  return `${computer ? computerName(computer) : `Computer ${recording.computerId.slice(0, 8)}`} · screen ${recording.screen}`;
}

export const recordingLength = (recording: Recording) => formatClock(recording.durationMs);

/** Complete, still recording, or incomplete with its reason in words. */
export function RecordingStatus({ recording }: { recording: Recording }) {
  if (recording.status === "complete") return <span className="badge ok">Complete</span>;
  if (recording.status === "recording") return <span className="badge warn">● Recording now</span>;
  return (
    <span>
      <span className="badge danger">Incomplete</span>
      {recording.incompleteReason ? <span className="small muted"> {recording.incompleteReason}</span> : null}
    </span>
  );
}
