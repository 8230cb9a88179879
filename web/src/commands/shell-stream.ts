import { api, problemOf, type Schema } from "@/api/client.ts";

export type ShellEvent = Schema<"ShellEvent">;
type ShellRequest = Schema<"ShellRequest">;

/**
 * Runs a command on a computer (admins and owners) and hands each event of its NDJSON stream to
 * `onEvent` as it arrives: stdout/stderr chunks, then `exit` (or `error` when the stream broke).
 * A refusal before the stream starts (stopped computer, bad folder, role) throws the api's Problem.
 * Aborting `signal` closes the connection, which kills the command on the computer.
 */
export async function runShell({
  workspaceId,
  computerId,
  request,
  signal,
  onEvent,
}: {
  workspaceId: string;
  computerId: string;
  request: ShellRequest;
  signal: AbortSignal;
  onEvent: (event: ShellEvent) => void;
}): Promise<void> {
  const { data, error, response } = await api.POST(
    "/v1/workspaces/{workspaceId}/computers/{computerId}/shell",
    {
      params: { path: { workspaceId, computerId } },
      body: request,
      parseAs: "stream",
      signal,
    },
  );
  if (!response.ok || !data) throw await problemOf(response, error);

  const reader = data.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffered += value;
      // One JSON object per line; the last piece may be half a line, kept for the next chunk.
      const lines = buffered.split("\n");
      buffered = lines.pop() ?? "";
      for (const line of lines) if (line.trim()) onEvent(JSON.parse(line) as ShellEvent);
    }
    if (buffered.trim()) onEvent(JSON.parse(buffered) as ShellEvent);
  } finally {
    // whatever ended the reading (a garbled line too), the command must not run on unread
    void reader.cancel().catch(() => undefined);
  }
}
