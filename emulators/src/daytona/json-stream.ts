import type { ServerResponse } from "node:http";
import { StringDecoder } from "node:string_decoder";
import { writePaced } from "../http/paced.ts";

/**
 * An answer written as it is made (JSON, or a multipart body), so a command's output or a file of
 * any size goes from the sandbox to the client a chunk at a time, at the client's pace.
 */
export class JsonStream {
  constructor(private readonly res: ServerResponse) {}

  /** Starts the answer; nothing can change its status after this. */
  begin(status: number): void {
    this.res.writeHead(status, { "Content-Type": "application/json" });
  }

  async raw(text: string): Promise<void> {
    await this.write(text);
  }

  async bytes(data: Buffer): Promise<void> {
    await this.write(data);
  }

  /** A string value from bytes (UTF-8, invalid sequences as U+FFFD, as Go's string() does). */
  async string(chunks: AsyncIterable<Buffer>): Promise<void> {
    const decoder = new StringDecoder("utf8");
    await this.write('"');
    for await (const chunk of chunks) await this.write(JSON.stringify(decoder.write(chunk)).slice(1, -1));
    await this.write(`${JSON.stringify(decoder.end()).slice(1, -1)}"`);
  }

  end(): void {
    this.res.end();
  }

  private async write(text: string | Buffer): Promise<void> {
    if (this.res.destroyed) throw new Error("the client went away");
    await writePaced(this.res, text);
  }
}
