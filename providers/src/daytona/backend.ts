import { type Backend, emulatorInstance, required, textOf } from "../selection/backend.ts";

/** `daytona`: Daytona's sandboxes, through its SDK. */
export const daytonaBackend: Backend = {
  keyVariable: "DAYTONA_API_KEY",
  variables: [
    { name: "DAYTONA_API_KEY", type: "secret" },
    // the SDK's own settings
    { name: "DAYTONA_API_URL", type: "url" },
    { name: "DAYTONA_TARGET", type: "text" },
  ],
  async build({ variables }) {
    const apiKey = required(variables, "DAYTONA_API_KEY", "daytona");
    const { createDaytonaProvider } = await import("./index.ts");
    return createDaytonaProvider({
      connection: {
        apiKey,
        apiUrl: textOf(variables, "DAYTONA_API_URL"),
        target: textOf(variables, "DAYTONA_TARGET"),
      },
    });
  },
};

/** `daytona-emulator`: the same adapter pointed at a Daytona emulator on loopback, as for e2b-emulator. */
export const daytonaEmulatorBackend: Backend = {
  testOnly: true,
  onThisMachine: true,
  emulates: "daytona",
  async build({ dataDir }) {
    const [{ startDaytonaEmulator }, { createDaytonaProvider }] = await Promise.all([
      import("@cubicle/emulators/daytona"),
      import("./index.ts"),
    ]);
    const emulator = await startDaytonaEmulator({ instance: emulatorInstance(dataDir) });
    const provider = createDaytonaProvider({
      kind: "daytona-emulator",
      connection: { apiKey: emulator.apiKey, apiUrl: emulator.apiUrl, target: emulator.target },
    });
    return Object.assign(provider, { shutdown: () => emulator.close() });
  },
};
