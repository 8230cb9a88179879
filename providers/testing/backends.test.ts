import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startE2bEmulator } from "@cubicle/emulators/e2b";
import { createSupervisorClient } from "@cubicle/supervisor/client";
import { startTestSupervisor } from "@cubicle/supervisor/testing";
import type { SandboxProvider } from "../src/contract/index.ts";
import { createDesktopProvider } from "../src/desktop/index.ts";
import { createDockerProvider } from "../src/docker/index.ts";
import { createE2bProvider } from "../src/e2b/index.ts";
import { createFakeProvider } from "./fake/index.ts";
import { ArmedFaults } from "./faults.ts";
import { type ConformanceException, conformanceSuite } from "./suites/conformance.ts";
import { faultSuite } from "./suites/faults.ts";
import type { MakeProvider, ProviderUnderTest } from "./suites/types.ts";

/** An in-process provider built around a fresh fault plan, with nothing to tear down. */
function inMemory(build: (faults: ArmedFaults) => SandboxProvider): ProviderUnderTest {
  const faults = new ArmedFaults();
  return { provider: build(faults), faults, cleanup: async () => {} };
}

/** The host's own processes and screens, with homes in a temporary folder removed afterwards. */
const desktop: MakeProvider = async () => {
  const homesDir = await mkdtemp(join(tmpdir(), "cubicle-desktop-homes-"));
  const faults = new ArmedFaults();
  const provider = createDesktopProvider({ homesDir, faults });
  return {
    provider,
    faults,
    liveScreens: provider.capabilities.graphical,
    cleanup: async () => {
      await provider.shutdown();
      await rm(homesDir, { recursive: true, force: true });
    },
  };
};

/** Containers on the real Docker engine, through a real supervisor on a free loopback port. */
const docker: MakeProvider = async () => {
  const supervisor = await startTestSupervisor();
  const faults = new ArmedFaults();
  const provider = createDockerProvider({
    supervisor: createSupervisorClient({ baseUrl: supervisor.url, token: supervisor.token }),
    faults,
  });
  return { provider, faults, liveScreens: true, cleanup: () => supervisor.close() };
};

/**
 * The real e2b adapter and the unmodified SDK against the loopback E2B emulator, whose sandboxes
 * are real desktops in the local Docker engine; every sandbox it made is removed afterwards.
 */
const e2b: MakeProvider = async () => {
  const emulator = await startE2bEmulator({ instance: `suites-${process.pid}` });
  const faults = new ArmedFaults();
  const provider = createE2bProvider({
    kind: "e2b-emulator",
    connection: {
      apiKey: emulator.apiKey,
      apiUrl: emulator.apiUrl,
      sandboxUrl: emulator.sandboxUrl,
      domain: emulator.domain,
    },
    sandboxLifetimeMs: 15 * 60_000,
    faults,
  });
  return {
    provider,
    faults,
    liveScreens: true,
    cleanup: () => emulator.close({ removeSandboxes: true }),
  };
};

/** Every backend the shared suites hold to the contract; adding one is one line. */
const BACKENDS: {
  name: string;
  make: MakeProvider;
  exceptions?: Partial<Record<ConformanceException, string>>;
}[] = [
  {
    name: "fake",
    make: async () => inMemory((faults) => createFakeProvider({ faults })),
    exceptions: {
      "import-while-a-browser-writes":
        "it runs no browsers (no real screen), and its in-memory home is replaced in one step",
      "launch-starts-programs":
        "its shell runs no programs, so a launch fails with APP_LAUNCH_FAILED (api/test/tools.test.ts asserts that)",
    },
  },
  { name: "desktop", make: desktop },
  { name: "docker", make: docker },
  { name: "e2b-emulator", make: e2b },
];

for (const { name, make, exceptions } of BACKENDS) {
  conformanceSuite(name, make, exceptions);
  faultSuite(name, make);
}
