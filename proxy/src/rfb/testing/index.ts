// Test and benchmark tools for RFB: other packages' suites drive real screens through the proxy with these.
export { ByteReader } from "../byte-reader.ts";
export { versionMessage } from "../handshake.ts";
export { ClientMessageType, Encoding } from "../protocol.ts";
export { startDesktop, type TestDesktop } from "./desktop.ts";
export { memoryPair, tcpPair } from "./pairs.ts";
export { type Rectangle, RfbClient, type ServerInit, type ServerMessage } from "./rfb-client.ts";
