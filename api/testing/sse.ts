export interface ServerSentEvent {
  event: string;
  data: string;
  /** The event's `id:` field, when it has one. */
  id?: string;
}

/**
 * Reads a text/event-stream response as it arrives. `next` waits for the next event that matches,
 * skipping others; `ended` resolves when the server closes the stream.
 */
export class EventStreamReader {
  readonly events: ServerSentEvent[] = [];
  readonly comments: string[] = [];
  /** Everything received, as it came. */
  raw = "";
  readonly ended: Promise<void>;
  private cursor = 0;
  private notify = () => {};

  constructor(body: ReadableStream<Uint8Array>) {
    this.ended = this.read(body);
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = "";
    const reader = body.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const text = decoder.decode(value, { stream: true });
        this.raw += text;
        buffer += text;
        let end = buffer.indexOf("\n\n");
        while (end !== -1) {
          this.parse(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          end = buffer.indexOf("\n\n");
        }
      }
    } catch {
      // Aborted by the test.
    } finally {
      this.notify();
    }
  }

  private parse(block: string): void {
    let event = "message";
    let id: string | undefined;
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) this.comments.push(line.slice(1).trim());
      else if (line.startsWith("event: ")) event = line.slice(7);
      else if (line.startsWith("data: ")) data.push(line.slice(6));
      else if (line.startsWith("id: ")) id = line.slice(4);
    }
    if (data.length > 0)
      this.events.push({ event, data: data.join("\n"), ...(id === undefined ? {} : { id }) });
    this.notify();
  }

  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON came and assert on it.
  async next(event: string, matches: (data: any) => boolean = () => true, timeoutMs = 3_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      while (this.cursor < this.events.length) {
        const candidate = this.events[this.cursor++];
        if (candidate?.event !== event) continue;
        const data = JSON.parse(candidate.data);
        if (matches(data)) return data;
      }
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`no "${event}" event within ${timeoutMs} ms; saw ${JSON.stringify(this.events)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.notify = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }
}
