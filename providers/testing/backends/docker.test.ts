import { createSupervisorClient } from "@cubicle/supervisor/client";
import { startTestSupervisor } from "@cubicle/supervisor/testing";
import { createDockerProvider } from "../../src/docker/index.ts";
import { ArmedFaults } from "../faults.ts";
import { conformanceSuite } from "../suites/conformance.ts";
import { faultSuite } from "../suites/faults.ts";
import type { MakeProvider } from "../suites/types.ts";

/** Containers on the real Docker engine, through a real supervisor on a free loopback port. */
const docker: MakeProvider = async () => {
  const supervisor = await startTestSupervisor();
  const faults = new ArmedFaults();
  const provider = createDockerProvider({
    supervisor: createSupervisorClient({ baseUrl: supervisor.url, token: supervisor.token }),
    faults,
  });
  return {
    provider,
    faults,
    liveScreens: true,
    withWrongCredential: () =>
      createDockerProvider({
        supervisor: createSupervisorClient({ baseUrl: supervisor.url, token: "w".repeat(40) }),
      }),
    cleanup: () => supervisor.close(),
  };
};

conformanceSuite("docker", docker);
faultSuite("docker", docker);
