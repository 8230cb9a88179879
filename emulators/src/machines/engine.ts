import Docker from "dockerode";

/** How long one control call to the engine (inspect, create, pause, …) may take before it fails. */
export const ENGINE_CALL_MS = 30_000;

/** The local Docker engine (DOCKER_HOST, else /var/run/docker.sock), as dockerode finds it. */
export function localEngine(): Docker {
  return new Docker();
}

/**
 * One engine call, aborted when it has not answered in `ms`. The abort is disarmed once the call
 * settles: the engine's keep-alive sockets are reused, and a late abort of a finished request would
 * cut whatever stream uses its socket next.
 */
export async function bounded<T>(
  call: (options: { abortSignal: AbortSignal }) => Promise<T>,
  ms = ENGINE_CALL_MS,
) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`the engine did not answer in ${ms} ms`)), ms);
  try {
    return await call({ abortSignal: controller.signal });
  } finally {
    clearTimeout(timer);
  }
}

/** The HTTP status the engine answered with, when the error is the engine's answer. */
export function engineStatus(error: unknown): number | undefined {
  if (typeof error !== "object" || error === null || !("statusCode" in error)) return undefined;
  return typeof error.statusCode === "number" ? error.statusCode : undefined;
}

/** The machine is not there (any more): removed, or never made. */
export class MachineMissing extends Error {
  constructor(containerId: string, options?: ErrorOptions) {
    super(`container ${containerId.slice(0, 12)} does not exist`, options);
    this.name = "MachineMissing";
  }
}

/** The machine exists but cannot run anything now (paused or stopped). */
export class MachineNotRunning extends Error {
  constructor(containerId: string, options?: ErrorOptions) {
    super(`container ${containerId.slice(0, 12)} is not running`, options);
    this.name = "MachineNotRunning";
  }
}

/** The engine's "no such container" and "container is paused/stopped" answers, as typed errors. */
export function machineError(containerId: string, error: unknown): unknown {
  const status = engineStatus(error);
  if (status === 404) return new MachineMissing(containerId, { cause: error });
  if (status === 409) return new MachineNotRunning(containerId, { cause: error });
  return error;
}
