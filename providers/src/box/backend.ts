import { type Backend, emulatorInstance, required, textOf } from "../selection/backend.ts";

/** `box`: Box's sandboxes, over its REST API. */
export const boxBackend: Backend = {
  keyVariable: "BOX_API_KEY",
  variables: [
    { name: "BOX_API_KEY", type: "secret" },
    // Box's API address; unset, Box's own
    { name: "BOX_API_URL", type: "url" },
  ],
  async build({ variables }) {
    const apiKey = required(variables, "BOX_API_KEY", "box");
    const { createBoxProvider } = await import("./index.ts");
    return createBoxProvider({ connection: { apiKey, apiUrl: textOf(variables, "BOX_API_URL") } });
  },
};

/** `box-emulator`: the same adapter pointed at a Box emulator on loopback, as for e2b-emulator. */
export const boxEmulatorBackend: Backend = {
  testOnly: true,
  onThisMachine: true,
  emulates: "box",
  async build({ dataDir }) {
    const [{ startBoxEmulator }, { createBoxProvider }] = await Promise.all([
      import("@cubicle/emulators/box"),
      import("./index.ts"),
    ]);
    const emulator = await startBoxEmulator({ instance: emulatorInstance(dataDir) });
    const provider = createBoxProvider({
      kind: "box-emulator",
      connection: { apiKey: emulator.apiKey, apiUrl: emulator.apiUrl },
    });
    return Object.assign(provider, { shutdown: () => emulator.close() });
  },
};
