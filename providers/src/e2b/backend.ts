import { type Backend, emulatorInstance, required, textOf, vendorLifetimeMs } from "../selection/backend.ts";

/** `e2b`: E2B's desktop sandboxes, through its SDK. */
export const e2bBackend: Backend = {
  keyVariable: "E2B_API_KEY",
  variables: [
    { name: "E2B_API_KEY", type: "secret" },
    // the SDK's own redirect settings (an E2B-compatible endpoint, a self-hosted E2B)
    { name: "E2B_API_URL", type: "url" },
    { name: "E2B_SANDBOX_URL", type: "url" },
    { name: "E2B_DOMAIN", type: "text" },
  ],
  async build({ variables, idleMs }) {
    const apiKey = required(variables, "E2B_API_KEY", "e2b");
    const { createE2bProvider } = await import("./index.ts");
    return createE2bProvider({
      connection: {
        apiKey,
        apiUrl: textOf(variables, "E2B_API_URL"),
        sandboxUrl: textOf(variables, "E2B_SANDBOX_URL"),
        domain: textOf(variables, "E2B_DOMAIN"),
      },
      sandboxLifetimeMs: vendorLifetimeMs(idleMs),
    });
  },
};

/**
 * `e2b-emulator`: the same adapter, pointed by the SDK's own settings at an E2B emulator on
 * loopback whose sandboxes are desktops in the local Docker engine; named after DATA_DIR, so a
 * restarted api finds its sandboxes again.
 */
export const e2bEmulatorBackend: Backend = {
  testOnly: true,
  onThisMachine: true,
  emulates: "e2b",
  async build({ dataDir, idleMs }) {
    const [{ startE2bEmulator }, { createE2bProvider }] = await Promise.all([
      import("@cubicle/emulators/e2b"),
      import("./index.ts"),
    ]);
    const emulator = await startE2bEmulator({ instance: emulatorInstance(dataDir) });
    const provider = createE2bProvider({
      kind: "e2b-emulator",
      connection: {
        apiKey: emulator.apiKey,
        apiUrl: emulator.apiUrl,
        sandboxUrl: emulator.sandboxUrl,
        domain: emulator.domain,
      },
      sandboxLifetimeMs: vendorLifetimeMs(idleMs),
    });
    return Object.assign(provider, { shutdown: () => emulator.close() });
  },
};
