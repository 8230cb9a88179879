/** A scripted VNC server for bridge tests: it runs the server's half of the handshake on any stream. */
import type { Duplex } from "node:stream";
import { ByteReader } from "../byte-reader.ts";
import { vncAuthResponse } from "../vnc-auth.ts";

export const FAKE_VNC_PASSWORD = "s3cret";

export const u32 = (n: number) => {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(n);
  return bytes;
};

/** An RFB string: its length, then its bytes. */
export const rfbText = (value: string) => Buffer.concat([u32(value.length), Buffer.from(value, "latin1")]);

function serverInit(width: number, height: number, name: string): Buffer {
  const fixed = Buffer.alloc(20);
  fixed.writeUInt16BE(width, 0);
  fixed.writeUInt16BE(height, 2);
  Buffer.from([32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0]).copy(fixed, 4);
  return Buffer.concat([fixed, rfbText(name)]);
}

export interface FakeServerOptions {
  version?: string;
  /** Security types offered (3.7+), or the one imposed (3.3). */
  securityTypes?: number[];
  password?: string;
  /** Overrides the SecurityResult the password check would give. */
  securityResult?: number;
}

/**
 * Serves a 640x480 "fake desktop" on `stream`; resolves with the ClientInit it got and `reader`,
 * positioned at the client's first message.
 */
export async function fakeVncServer(stream: Duplex, options: FakeServerOptions = {}) {
  const reader = new ByteReader(stream);
  const version = options.version ?? "003.008";
  const minor = Number(version.slice(4));
  stream.write(`RFB ${version}\n`);
  const answered = (await reader.read(12)).toString("latin1");
  const types = options.securityTypes ?? [2];
  let chosen: number;
  if (minor === 3) {
    chosen = types[0] ?? 0;
    stream.write(u32(chosen));
  } else {
    stream.write(Buffer.from([types.length, ...types]));
    chosen = await reader.readU8();
  }
  let result = 0;
  if (chosen === 2) {
    const challenge = Buffer.from("0123456789abcdef");
    stream.write(challenge);
    const response = await reader.read(16);
    result = response.equals(vncAuthResponse(options.password ?? FAKE_VNC_PASSWORD, challenge)) ? 0 : 1;
  }
  result = options.securityResult ?? result;
  if (chosen === 2 || minor === 8) {
    stream.write(u32(result));
    if (result !== 0) {
      if (minor === 8) stream.write(rfbText("Authentication failed"));
      stream.end();
      return { reader, answered, chosen, clientInit: undefined };
    }
  }
  const clientInit = await reader.readU8();
  stream.write(serverInit(640, 480, "fake desktop"));
  return { reader, answered, chosen, clientInit };
}
