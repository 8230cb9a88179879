import { SCREEN_STATUS_PROTOCOL } from "@cubicle/proxy/capability";
import { describe, expect, it } from "vitest";
import { closeOutcome, readCapability, readStatus, STATUS_PROTOCOL } from "./protocol.ts";

describe("the status protocol", () => {
  it("is the one the proxy answers text frames on", () => {
    expect(STATUS_PROTOCOL).toBe(SCREEN_STATUS_PROTOCOL);
  });
});

describe("the proxy's close codes", () => {
  it.each([
    [1000, { kind: "ended", reason: "screen-closed" }],
    [1001, { kind: "reconnect" }],
    [1005, { kind: "reconnect" }],
    [1006, { kind: "reconnect" }],
    [1008, { kind: "ended", reason: "protocol-violation" }],
    [1011, { kind: "reconnect" }],
    [4001, { kind: "ended", reason: "control-ended" }],
    [4002, { kind: "ended", reason: "idle" }],
    [4003, { kind: "reconnect" }],
    [4004, { kind: "refused", reason: "access-revoked" }],
    [4005, { kind: "reconnect" }],
  ])("%i", (code, outcome) => {
    expect(closeOutcome(code)).toEqual(outcome);
  });
});

describe("status frames", () => {
  it("reads who controls the screen and when a lease ends", () => {
    expect(readStatus('{"type":"controlled","controlled":true}')).toEqual({
      type: "controlled",
      controlled: true,
    });
    expect(readStatus('{"type":"lease","expiresAt":"2030-01-02T03:04:05.000Z"}')).toEqual({
      type: "lease",
      expiresAt: new Date("2030-01-02T03:04:05.000Z"),
    });
  });

  it("ignores what it does not know", () => {
    for (const text of [
      "not json",
      "null",
      "[]",
      '{"type":"future"}',
      '{"type":"controlled","controlled":"yes"}',
      '{"type":"lease","expiresAt":"soon"}',
    ])
      expect(readStatus(text)).toBeUndefined();
  });
});

describe("capabilities", () => {
  const capability = {
    token: "t",
    expiresAt: "2030-01-01T00:00:00.000Z",
    mode: "view",
    url: "wss://proxy.example/screen",
    protocol: "cubicle.screen.v1",
    recorded: false,
  };

  it("takes what a socket needs", () => {
    expect(readCapability(capability)).toEqual({
      token: "t",
      mode: "view",
      url: "wss://proxy.example/screen",
    });
  });

  it("refuses what cannot open a screen socket", () => {
    expect(readCapability(null)).toBeUndefined();
    expect(readCapability({ ...capability, token: "" })).toBeUndefined();
    expect(readCapability({ ...capability, mode: "record" })).toBeUndefined();
    expect(readCapability({ ...capability, url: "https://proxy.example/screen" })).toBeUndefined();
  });
});
