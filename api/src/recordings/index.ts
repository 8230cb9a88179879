// What the rest of the api uses of recordings: minting recorded capabilities, the policy, the
// routes and the housekeeping job.
export {
  createPendingRecording,
  discardPendingRecording,
  type PendingRecording,
  screenRecorded,
} from "./catalogue.ts";
export { recordingHousekeepingJob, tidyRecordings } from "./housekeeping.ts";
export { recordingIngestRoutes } from "./internal-routes.ts";
export { type RecordingPolicy, recordingPolicyOf } from "./policy.ts";
export { mintSessionRecorder, type RecordedSession, type SessionRecorderCapability } from "./recorders.ts";
export { Recordings } from "./recordings.ts";
export { recordingRoutes } from "./routes.ts";
export { SessionRecorders, sessionRecordingJob } from "./session-recorder.ts";
export { createRecordingStore, type RecordingStore, RecordingStoreError } from "./store.ts";
