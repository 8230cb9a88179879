import type { ProviderError, ProviderKind, SandboxProvider } from "../contract/index.ts";

/** A provider whose every operation fails with the same error (`none`: computers are disabled). */
export function createRefusingProvider(kind: ProviderKind, error: () => ProviderError): SandboxProvider {
  const refuse = (): never => {
    throw error();
  };
  return {
    kind,
    capabilities: { graphical: false, maxScreens: 0, pty: false, egress: [] },
    // nothing to authenticate: what it refuses is the configuration's doing, not a credential's
    verifyAccess: async () => undefined,
    provision: async () => refuse(),
    stop: async () => refuse(),
    destroy: async () => refuse(),
    status: async () => refuse(),
    setEgress: async () => refuse(),
    openScreen: async () => refuse(),
    openControl: async () => refuse(),
    closeControl: async () => refuse(),
    // An async generator, so the refusal arrives when the caller iterates, like every other failure.
    run: async function* () {
      yield refuse();
    },
    listFiles: async () => refuse(),
    readFile: async () => refuse(),
    writeFile: async () => refuse(),
    deleteFile: async () => refuse(),
    exportHome: async () => refuse(),
    importHome: async () => refuse(),
    settleBrowsers: async () => refuse(),
    screenEnv: () => null,
    launch: async () => refuse(),
    closeBrowsers: async () => refuse(),
    observe: async () => refuse(),
    act: async () => refuse(),
  };
}
