import type { components } from "./schema";
import { chunksOf } from "./streams.ts";

export type ShellRequest = components["schemas"]["ShellRequest"];
/** One line of a command's stream: output as it comes, then its `exit` (or an `error`). */
export type ShellEvent =
  | { type: "stdout"; data: string }
  | { type: "stderr"; data: string }
  | { type: "exit"; code: number | string; message?: string; truncated?: boolean }
  | { type: "error"; code: string; message: string };

export interface ShellResult {
  stdout: string;
  stderr: string;
  /** The exit code: 124 when it timed out, 130 when aborted; a string when the command never ran. */
  code: number | string;
  truncated: boolean;
}

/** The api's 130: what a command killed because its caller went away ends with. */
export const ABORTED_EXIT = 130;

/**
 * The events of an NDJSON shell stream as they arrive. When `signal` aborts, the api kills the
 * command (the connection closes) and the events end with `exit` 130, as the api would have sent.
 */
export async function* shellEvents(
  response: Response,
  signal: AbortSignal | undefined,
): AsyncGenerator<ShellEvent> {
  const body = response.body;
  if (!body) return;
  let buffered = "";
  const decoder = new TextDecoder();
  try {
    for await (const chunk of chunksOf(body)) {
      buffered += decoder.decode(chunk, { stream: true });
      let end = buffered.indexOf("\n");
      while (end !== -1) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 1);
        if (line.trim() !== "") yield JSON.parse(line) as ShellEvent;
        end = buffered.indexOf("\n");
      }
    }
  } catch (error) {
    if (!signal?.aborted) throw error;
    yield { type: "exit", code: ABORTED_EXIT, message: "aborted" };
    return;
  }
  if (signal?.aborted) yield { type: "exit", code: ABORTED_EXIT, message: "aborted" };
}

/** Runs a stream of events to its end, keeping the output. */
export async function collect(events: AsyncIterable<ShellEvent>): Promise<ShellResult> {
  const result: ShellResult = { stdout: "", stderr: "", code: "NO_EXIT", truncated: false };
  for await (const event of events) {
    if (event.type === "stdout") result.stdout += event.data;
    else if (event.type === "stderr") result.stderr += event.data;
    else {
      result.code = event.code;
      result.truncated = event.type === "exit" && event.truncated === true;
    }
  }
  return result;
}
