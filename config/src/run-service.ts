import { ConfigError } from "./config-error.ts";

export interface RunningService {
  close(): Promise<void>;
}

/** The parts of `process` a service's start-up touches; tests pass their own. */
export interface ServiceProcess {
  once(signal: "SIGINT" | "SIGTERM", listener: () => void): unknown;
  exit(code: number): void;
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * A process's `main`: starts the service and closes it on SIGINT or SIGTERM, exiting 0. A setup
 * failure gets one readable paragraph and a non-zero exit, not a stack trace: 78 (EX_CONFIG) with
 * every problem for a ConfigError, 1 with one line for anything else.
 *
 * `name` completes "Cubicle … cannot start", e.g. "API", "supervisor", "proxy".
 */
export async function runService(
  name: string,
  start: () => Promise<RunningService>,
  options: { process?: ServiceProcess; log?: (message: string) => void } = {},
): Promise<void> {
  const host = options.process ?? process;
  const log = options.log ?? ((message: string) => console.error(message));
  let service: RunningService;
  try {
    service = await start();
  } catch (error) {
    if (error instanceof ConfigError) {
      log(`Cubicle ${name} cannot start; fix its configuration:\n${error.message}`);
      host.exit(78);
    } else {
      log(`Cubicle ${name} cannot start: ${messageOf(error)}`);
      host.exit(1);
    }
    return;
  }
  const shutdown = () => {
    service.close().then(
      () => host.exit(0),
      (error: unknown) => {
        log(`Cubicle ${name} did not stop cleanly: ${messageOf(error)}`);
        host.exit(1);
      },
    );
  };
  host.once("SIGINT", shutdown);
  host.once("SIGTERM", shutdown);
}
