/**
 * RFB's numbers (RFC 6143 and the community extensions noVNC and the VNC servers speak) and its
 * PIXEL_FORMAT: the one account of them for the proxy's framing, its test client and the api's
 * recording decoder (as `@cubicle/proxy/rfb`). Plain TypeScript with no Node modules, so that
 * anything that reads RFB can import it.
 */

export const ClientMessageType = {
  SetPixelFormat: 0,
  SetEncodings: 2,
  FramebufferUpdateRequest: 3,
  KeyEvent: 4,
  PointerEvent: 5,
  ClientCutText: 6,
  EnableContinuousUpdates: 150,
  ClientFence: 248,
  Xvp: 250,
  SetDesktopSize: 251,
  Gii: 253,
  Qemu: 255,
} as const;

export const ServerMessageType = {
  FramebufferUpdate: 0,
  SetColourMapEntries: 1,
  Bell: 2,
  ServerCutText: 3,
  EndOfContinuousUpdates: 150,
  ServerFence: 248,
  Xvp: 250,
} as const;

/**
 * Encodings as SetEncodings and rectangle headers carry them (signed 32-bit): the first ones carry
 * pixels, the negative ones (and VMware's cursor) are pseudo-encodings, which carry something else
 * about the screen or announce an extension.
 */
export const Encoding = {
  Raw: 0,
  CopyRect: 1,
  RRE: 2,
  Hextile: 5,
  Zlib: 6,
  Tight: 7,
  ZRLE: 16,
  JPEG: 21,
  TightPNG: -260,
  DesktopSize: -223,
  LastRect: -224,
  PointerPos: -232,
  Cursor: -239,
  XCursor: -240,
  QEMUExtendedKeyEvent: -258,
  QEMULedEvent: -261,
  DesktopName: -307,
  ExtendedDesktopSize: -308,
  Fence: -312,
  ContinuousUpdates: -313,
  CursorWithAlpha: -314,
  ExtendedMouseButtons: -316,
  /** 0xC0A1E5CE as the signed 32-bit number SetEncodings carries. */
  ExtendedClipboard: 0xc0a1e5ce | 0,
  VMwareCursor: 0x574d5664,
} as const;

/** RFB's PIXEL_FORMAT (16 bytes in ServerInit and SetPixelFormat). */
export interface PixelFormat {
  bitsPerPixel: number;
  depth: number;
  bigEndian: boolean;
  trueColour: boolean;
  redMax: number;
  greenMax: number;
  blueMax: number;
  redShift: number;
  greenShift: number;
  blueShift: number;
}

/** Reads a PIXEL_FORMAT from the first 16 of `bytes` (the 3 padding bytes at the end ignored). */
export function readPixelFormat(bytes: Uint8Array): PixelFormat {
  const view = new DataView(bytes.buffer, bytes.byteOffset, 16);
  return {
    bitsPerPixel: view.getUint8(0),
    depth: view.getUint8(1),
    bigEndian: view.getUint8(2) !== 0,
    trueColour: view.getUint8(3) !== 0,
    redMax: view.getUint16(4),
    greenMax: view.getUint16(6),
    blueMax: view.getUint16(8),
    redShift: view.getUint8(10),
    greenShift: view.getUint8(11),
    blueShift: view.getUint8(12),
  };
}
