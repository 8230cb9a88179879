/**
 * The two RFB handshakes the proxy runs (RFC 6143 §7.1–7.3): as a client towards the VNC server, where
 * it performs VNC Authentication with a password the browser never sees, and as a server towards the
 * browser, which is offered security type None because it was already authenticated by its capability.
 */
import type { Writable } from "node:stream";
import type { ByteReader } from "./byte-reader.ts";
import { vncAuthResponse } from "./vnc-auth.ts";

const SECURITY_NONE = 1;
const SECURITY_VNC_AUTH = 2;

/** Longest failure reason read from a server; a longer one is not worth waiting for. */
const MAX_REASON_BYTES = 4096;
/** A desktop name is a short label; a huge one means the stream is not what we think it is. */
const MAX_DESKTOP_NAME_BYTES = 64 * 1024;

export class HandshakeFailure extends Error {
  override name = "HandshakeFailure";
  constructor(
    readonly reason: "handshake-failed" | "target-auth-failed",
    detail: string,
  ) {
    super(detail);
  }
}

/** Minor version of RFB 3.x that a connection speaks: 3, 7 or 8. */
export type RfbMinorVersion = 3 | 7 | 8;

export function versionMessage(minor: RfbMinorVersion): Buffer {
  return Buffer.from(`RFB 003.00${minor}\n`, "latin1");
}

function parseVersion(message: Buffer): { major: number; minor: number } | undefined {
  const match = /^RFB (\d{3})\.(\d{3})\n$/.exec(message.toString("latin1"));
  return match ? { major: Number(match[1]), minor: Number(match[2]) } : undefined;
}

function u32(value: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(value);
  return bytes;
}

function stringMessage(text: string): Buffer {
  const bytes = Buffer.from(text, "latin1");
  return Buffer.concat([u32(bytes.length), bytes]);
}

/** Server-supplied text, made safe to log. */
async function readReason(reader: ByteReader): Promise<string> {
  const length = await reader.readU32();
  if (length > MAX_REASON_BYTES) return `(a ${length}-byte reason)`;
  return (await reader.read(length)).toString("latin1").replace(/[^\x20-\x7e]/g, "?");
}

/**
 * Authenticates to the VNC server up to (not including) ClientInit. `password` undefined means the
 * server must offer None; with a password, VNC Authentication is preferred and None accepted.
 */
export async function handshakeTarget(
  reader: ByteReader,
  target: Writable,
  password: string | undefined,
): Promise<RfbMinorVersion> {
  const offered = parseVersion(await reader.read(12));
  if (!offered || offered.major < 3) {
    throw new HandshakeFailure("handshake-failed", "target does not speak RFB 3.x");
  }
  // Versions between the published ones are read as the one below (RFC 6143 §7.1.1), later ones as 3.8.
  const minor: RfbMinorVersion = offered.major > 3 || offered.minor >= 8 ? 8 : offered.minor >= 7 ? 7 : 3;
  target.write(versionMessage(minor));

  const securityType =
    minor === 3 ? await readSecurityType33(reader) : await chooseSecurityType(reader, password);
  if (minor !== 3) target.write(Buffer.from([securityType]));
  if (securityType === SECURITY_VNC_AUTH) {
    if (password === undefined) throw new HandshakeFailure("handshake-failed", "target requires a password");
    target.write(vncAuthResponse(password, await reader.read(16)));
  } else if (securityType !== SECURITY_NONE) {
    throw new HandshakeFailure("handshake-failed", `target chose security type ${securityType}`);
  }

  // Before 3.8 a server sends no SecurityResult after None.
  if (securityType === SECURITY_VNC_AUTH || minor === 8) {
    const status = await reader.readU32();
    if (status !== 0) {
      const reason = minor === 8 ? await readReason(reader) : "authentication failed";
      throw new HandshakeFailure("target-auth-failed", reason);
    }
  }
  return minor;
}

async function readSecurityType33(reader: ByteReader): Promise<number> {
  const type = await reader.readU32();
  if (type === 0) {
    throw new HandshakeFailure("handshake-failed", `target refused: ${await readReason(reader)}`);
  }
  return type;
}

async function chooseSecurityType(reader: ByteReader, password: string | undefined): Promise<number> {
  const count = await reader.readU8();
  if (count === 0) {
    throw new HandshakeFailure("handshake-failed", `target refused: ${await readReason(reader)}`);
  }
  const types = [...(await reader.read(count))];
  if (password !== undefined && types.includes(SECURITY_VNC_AUTH)) return SECURITY_VNC_AUTH;
  if (types.includes(SECURITY_NONE)) return SECURITY_NONE;
  throw new HandshakeFailure(
    "handshake-failed",
    `target offers security types [${types.join(", ")}], none usable${password === undefined ? " without a password" : ""}`,
  );
}

/** Reads ServerInit whole: 24 bytes of geometry and pixel format, then the desktop name. */
export async function readServerInit(reader: ByteReader): Promise<Buffer> {
  const fixed = await reader.read(24);
  const nameLength = fixed.readUInt32BE(20);
  if (nameLength > MAX_DESKTOP_NAME_BYTES) {
    throw new HandshakeFailure("handshake-failed", `target sent a ${nameLength}-byte desktop name`);
  }
  return Buffer.concat([fixed, await reader.read(nameLength)]);
}

/** Minor versions a browser may ask for; 3.5 was sent by some old clients and means 3.3 (RFC 6143 §7.1.1). */
const BROWSER_VERSIONS = new Map<number, RfbMinorVersion>([
  [3, 3],
  [5, 3],
  [7, 7],
  [8, 8],
]);

/** Plays the server towards the browser up to and including its ClientInit; returns the shared flag. */
export async function handshakeBrowser(reader: ByteReader, browser: Writable): Promise<number> {
  browser.write(versionMessage(8));
  const asked = parseVersion(await reader.read(12));
  const minor = asked?.major === 3 ? BROWSER_VERSIONS.get(asked.minor) : undefined;
  if (minor === undefined) {
    throw new HandshakeFailure("handshake-failed", "browser does not speak RFB 3.3, 3.7 or 3.8");
  }

  if (minor === 3) {
    browser.write(u32(SECURITY_NONE));
  } else {
    browser.write(Buffer.from([1, SECURITY_NONE]));
    const chosen = await reader.readU8();
    if (chosen !== SECURITY_NONE) {
      if (minor === 8) browser.write(Buffer.concat([u32(1), stringMessage("unsupported security type")]));
      throw new HandshakeFailure("handshake-failed", `browser chose security type ${chosen}`);
    }
    // Before 3.8 None goes straight to ClientInit (RFC 6143 §7.2.1).
    if (minor === 8) browser.write(u32(0));
  }
  return reader.readU8();
}
