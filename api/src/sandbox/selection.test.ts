import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { buildProvider, chooseProvider } from "@cubicle/providers";
import { type MachineRef, ProviderError, type SandboxProvider } from "@cubicle/providers/contract";
import { describe, expect, it } from "vitest";
import { parseEnv } from "../config/env.ts";
import { toHttpProblem } from "../http/errors.ts";

/** What the api's Sandbox hands buildProvider, from these variables. */
function contextOf(vars: Record<string, string>) {
  const env = parseEnv(vars);
  return { settings: env.sandbox, dataDir: env.dataDir, nodeEnv: env.nodeEnv, supervisorToken: undefined };
}

const ref: MachineRef = { homeKey: "home-1", providerRef: "ref-1", computerId: "c-1", workspaceId: "w-1" };

/** Every operation of the contract, called with valid arguments. */
function everyOperation(provider: SandboxProvider): Record<string, () => Promise<unknown>> {
  return {
    provision: () => provider.provision(ref),
    stop: () => provider.stop(ref),
    destroy: () => provider.destroy(ref),
    status: () => provider.status(ref),
    openScreen: () => provider.openScreen(ref, 0),
    openControl: () => provider.openControl(ref, 0, "ctl12345"),
    closeControl: () => provider.closeControl(ref, 0),
    run: async () => {
      for await (const event of provider.run(ref, { command: "true", timeoutMs: 1000 })) void event;
    },
    listFiles: () => provider.listFiles(ref, ""),
    readFile: () => provider.readFile(ref, "a", { maxBytes: 10 }),
    writeFile: () => provider.writeFile(ref, "a", new Uint8Array([1])),
    deleteFile: () => provider.deleteFile(ref, "a"),
    exportHome: () => provider.exportHome(ref),
    importHome: () => provider.importHome(ref, new ReadableStream()),
    observe: () => provider.observe(ref, 0),
    act: () => provider.act(ref, 0, [{ type: "wait", ms: 1 }]),
  };
}

const none = await buildProvider("none", contextOf({ SANDBOX_PROVIDER: "none" }));

describe("the none provider", () => {
  const provider = none;

  it.each(Object.entries(everyOperation(provider)))("refuses %s with SANDBOX_DISABLED", async (_, call) => {
    const error = await call().then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ code: "SANDBOX_DISABLED" });
  });

  it("becomes a 503 problem with code SANDBOX_DISABLED and a readable detail", async () => {
    const error = await provider.status(ref).catch((reason: unknown) => reason);
    expect(toHttpProblem(error)).toMatchObject({
      status: 503,
      code: "SANDBOX_DISABLED",
      detail: expect.stringContaining("SANDBOX_PROVIDER is none"),
    });
  });
});

describe("the box provider", () => {
  it("is built from BOX_API_KEY and BOX_API_URL, one screen, and reports a refused key as PROVIDER_AUTH_FAILED", async () => {
    // a loopback port nothing answers on would be PROVIDER_FAILURE; this one answers 401 like Box
    const server = createServer((_, res) => {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          ok: false,
          type: "box.error",
          status: 401,
          code: "unauthorized",
          message: "Unauthorized",
        }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const provider = await buildProvider(
        "box",
        contextOf({
          SANDBOX_PROVIDER: "box",
          BOX_API_KEY: "box_wrong",
          BOX_API_URL: `http://127.0.0.1:${port}/api/box/v1`,
        }),
      );
      expect(provider.kind).toBe("box");
      expect(provider.capabilities).toEqual({ graphical: true, maxScreens: 1, pty: false, egress: ["open"] });
      const error = await provider.status(ref).catch((reason: unknown) => reason);
      expect(error).toMatchObject({
        code: "PROVIDER_AUTH_FAILED",
        message: expect.stringContaining("BOX_API_KEY"),
      });
      expect(toHttpProblem(error)).toMatchObject({ status: 502, code: "PROVIDER_AUTH_FAILED" });
    } finally {
      server.close();
    }
  });

  it("refuses a BOX_API_URL that is not an http(s) URL", () => {
    expect(() =>
      parseEnv({ SANDBOX_PROVIDER: "box", BOX_API_KEY: "k", BOX_API_URL: "ascii.dev/api" }),
    ).toThrow(/BOX_API_URL/);
  });
});

describe("test kinds", () => {
  it("refuses every test kind in production, naming it, before loading anything", async () => {
    for (const kind of ["fake", "e2b-emulator", "daytona-emulator", "box-emulator"] as const) {
      await expect(
        buildProvider(kind, { ...contextOf({ SANDBOX_PROVIDER: "none" }), nodeEnv: "production" }),
      ).rejects.toThrow(`The ${kind} sandbox provider is for tests only`);
    }
  });

  it("loads the fake from providers/testing when asked for outside production", async () => {
    const fake = await buildProvider("fake", contextOf({ SANDBOX_PROVIDER: "fake", NODE_ENV: "test" }));
    expect(fake.kind).toBe("fake");
    expect(fake.capabilities.graphical).toBe(true);
  });
});

describe("chooseProvider", () => {
  const sandbox = (vars: Record<string, string>) => parseEnv(vars).sandbox;

  it.each([
    [{ SANDBOX_PROVIDER: "docker" }, "isolated", "docker", null],
    [{ SANDBOX_PROVIDER: "docker" }, "this-host", "desktop", "the computer host setting is this-host"],
    [{ SANDBOX_PROVIDER: "e2b" }, "isolated", "none", "E2B_API_KEY is not set"],
    [{ SANDBOX_PROVIDER: "e2b", E2B_API_KEY: "k" }, "isolated", "e2b", null],
    [{ SANDBOX_PROVIDER: "daytona" }, "isolated", "none", "DAYTONA_API_KEY is not set"],
    [{ SANDBOX_PROVIDER: "box" }, "this-host", "none", "BOX_API_KEY is not set"],
    [{ SANDBOX_PROVIDER: "box", BOX_API_KEY: "k" }, "this-host", "box", null],
    [{ SANDBOX_PROVIDER: "fake" }, "this-host", "fake", null],
    [{ SANDBOX_PROVIDER: "e2b-emulator" }, "isolated", "e2b-emulator", null],
  ] as const)("%o with computer host %s runs as %s", (vars, host, effective, reason) => {
    const choice = chooseProvider(sandbox(vars), host);
    expect(choice).toEqual({ configured: vars.SANDBOX_PROVIDER, effective, computerHost: host, reason });
  });
});
