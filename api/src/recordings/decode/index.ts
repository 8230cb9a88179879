/** Server-side decoding of screen recordings, with noVNC's own decoders: frames, video, inputs. */
export { RecordingDecodeError } from "./errors.ts";
export { frameAt, type RecordingFrame, type Records } from "./frame.ts";
export { inputsOf, type RecordingInput } from "./inputs.ts";
export { type ExportVideoOptions, exportVideo } from "./video.ts";
