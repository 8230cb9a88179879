export interface ServerSentEvent {
  event: string;
  data: string;
}

/**
 * Splits a text/event-stream body into events (comments and ids are not used here). `heard` is
 * told of every line, comments included: api's keep-alives are comments, and they are what shows a
 * quiet stream is alive.
 */
export async function* readServerSentEvents(
  body: ReadableStream<Uint8Array>,
  heard: () => void = () => {},
): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "message";
  let data: string[] = [];
  const reader = body.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let newline = buffer.search(/\r\n|\r|\n/);
    // a lone "\r" at the end may be half of "\r\n": wait for the next chunk to tell
    while (newline !== -1 && !(buffer[newline] === "\r" && newline === buffer.length - 1)) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer.startsWith("\r\n", newline) ? 2 : 1));
      heard();
      if (line === "") {
        if (data.length > 0) yield { event, data: data.join("\n") };
        event = "message";
        data = [];
      } else if (!line.startsWith(":")) {
        const colon = line.indexOf(":");
        const field = colon === -1 ? line : line.slice(0, colon);
        const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event = value;
        else if (field === "data") data.push(value);
      }
      newline = buffer.search(/\r\n|\r|\n/);
    }
  }
}
