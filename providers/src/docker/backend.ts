import type { Backend } from "../selection/backend.ts";

/** `docker`: containers on the local Docker engine, through the supervisor. */
export const dockerBackend: Backend = {
  onThisMachine: true,
  usesSupervisor: true,
  async build({ supervisorUrl, supervisorToken }) {
    if (!supervisorToken) throw new Error("SANDBOX_SUPERVISOR_TOKEN is required by the docker provider");
    const [{ createDockerProvider }, { createSupervisorClient }] = await Promise.all([
      import("./index.ts"),
      import("./supervisor/client.ts"),
    ]);
    return createDockerProvider({
      supervisor: createSupervisorClient({ baseUrl: supervisorUrl, token: supervisorToken }),
    });
  },
};
