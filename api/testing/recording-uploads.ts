import { type CapabilityKeyring, mintServiceToken } from "@cubicle/proxy/capability";
import { concatBytes, encodeRecord, type RecordingRecord, RecordKind } from "@cubicle/proxy/recording";
import { serverInit } from "../src/recordings/decode/testing/rfb-stream.ts";

/** A recording's records as the proxy would send them: a ServerInit (1280×800), then `extra`, then END. */
export function recordingOf(
  extra: RecordingRecord[],
  end: { complete: boolean; reason?: string } | null = { complete: true },
): { records: RecordingRecord[]; bytes: Uint8Array } {
  const last = extra.at(-1)?.at ?? 0;
  const records: RecordingRecord[] = [
    { kind: RecordKind.SERVER, at: 0, bytes: serverInit(1280, 800) },
    ...extra,
    ...(end ? [{ kind: RecordKind.END, at: last, ...end } as RecordingRecord] : []),
  ];
  return { records, bytes: concatBytes(records.map(encodeRecord)) };
}

/**
 * The proxy's upload of (a part of) a recording: a streaming POST with its service token; a part
 * after the first says where it continues (`offset`, the bytes of the parts before it).
 */
export async function upload(
  apiUrl: string,
  keyring: CapabilityKeyring,
  recordingId: string,
  body: Uint8Array | ReadableStream<Uint8Array>,
  signal?: AbortSignal,
  offset?: number,
): Promise<Response> {
  const query = offset === undefined ? "" : `?offset=${offset}`;
  return fetch(`${apiUrl}/internal/recordings/${recordingId}/content${query}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${await mintServiceToken(keyring, "proxy")}`,
      "content-type": "application/octet-stream",
    },
    body: body as BodyInit,
    duplex: "half",
    ...(signal ? { signal } : {}),
  } as RequestInit);
}
