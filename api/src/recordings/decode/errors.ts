/** A recording whose screen cannot be decoded: damaged bytes, or pixels noVNC's decoders cannot read. */
export class RecordingDecodeError extends Error {}
