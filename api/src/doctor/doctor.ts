import { usesSupervisor } from "@cubicle/providers";
import { createSupervisorClient, SupervisorError } from "@cubicle/providers/supervisor-wire";
import { CapabilityKeyring, mintServiceToken } from "@cubicle/proxy/capability";
import { type ApiEnv, ConfigError, parseEnv } from "../config/env.ts";
import { resolveSecrets, type Secrets } from "../config/secrets.ts";
import { type Check, providerChecks, supervisorChecks } from "./checks.ts";
import type { DoctorView } from "./routes.ts";

/** Long enough for a vendor's one call behind the api's; a doctor that hangs helps nobody. */
const API_TIMEOUT_MS = 20_000;

/**
 * `cubicle doctor`: reads the configuration as the api does (the same variables and secret files),
 * then asks the running api what it chose and whether that works, and, when computers run in
 * local Docker, the supervisor what it sees. Checks stop where the next would only repeat a
 * failure (no api, no checks of what it chose).
 */
export async function runDoctor(source: Record<string, string | undefined>): Promise<Check[]> {
  let env: ApiEnv;
  let secrets: Secrets;
  try {
    env = parseEnv(source);
    secrets = resolveSecrets(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return [
      {
        name: "configuration",
        outcome: "problem",
        detail: error.problems.join("; "),
        fix: "fix these variables (README, Configuration) as the api would need them",
      },
    ];
  }
  const checks: Check[] = [
    {
      name: "configuration",
      outcome: "ok",
      detail: "every secret present, long enough, and distinct from the others",
    },
  ];

  const apiUrl = (source.CUBICLE_API_URL ?? `http://${localHost(env.host)}:${env.port}`).replace(/\/+$/, "");
  const view = await askApi(apiUrl, secrets);
  if ("problem" in view) return [...checks, view.problem];
  checks.push({ name: "api", outcome: "ok", detail: `api ${view.version} answers at ${apiUrl}` });
  checks.push(...providerChecks(view));

  if (usesSupervisor(view.provider.effective)) checks.push(...(await askSupervisor(env, secrets, view)));
  return checks;
}

const localHost = (host: string) => (host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host);

const apiProblem = (detail: string, fix: string): { problem: Check } => ({
  problem: { name: "api", outcome: "problem", detail, fix },
});

async function askApi(apiUrl: string, secrets: Secrets): Promise<DoctorView | { problem: Check }> {
  const keyring = new CapabilityKeyring({
    current: secrets.screenCapabilityKey,
    previous: secrets.previousScreenCapabilityKeys,
  });
  let response: Response;
  try {
    response = await fetch(`${apiUrl}/internal/doctor`, {
      headers: { authorization: `Bearer ${await mintServiceToken(keyring, "doctor")}` },
      signal: AbortSignal.timeout(API_TIMEOUT_MS),
    });
  } catch {
    return apiProblem(
      `the api does not answer at ${apiUrl}`,
      "start Cubicle (npm start, or docker compose up -d), or point CUBICLE_API_URL at the api",
    );
  }
  if (response.status === 404)
    return apiProblem(
      `the api at ${apiUrl} refused the doctor: its SCREEN_CAPABILITY_KEY differs from the one the doctor read`,
      "run the doctor with the api's own configuration (docker compose exec api cubicle doctor)",
    );
  if (!response.ok)
    return apiProblem(
      `the api at ${apiUrl} answered ${response.status}: ${(await response.text()).slice(0, 300)}`,
      "read the api's log",
    );
  return (await response.json()) as DoctorView;
}

async function askSupervisor(env: ApiEnv, secrets: Secrets, view: DoctorView): Promise<Check[]> {
  const url = env.sandbox.supervisorUrl;
  // a supervisor that does not answer fails the call within seconds (the client's liveness watch)
  const supervisor = createSupervisorClient({ baseUrl: url, token: secrets.supervisorToken ?? "" });
  try {
    const diagnosis = await supervisor.diagnose();
    return [
      { name: "supervisor", outcome: "ok", detail: `the supervisor at ${url} answers and takes the token` },
      ...supervisorChecks(diagnosis, view.computers),
    ];
  } catch (error) {
    if (!(error instanceof SupervisorError)) throw error;
    if (error.code === "UNAUTHORIZED") {
      return [
        {
          name: "supervisor token",
          outcome: "problem",
          detail: `the supervisor at ${url} refused SANDBOX_SUPERVISOR_TOKEN: the api's and the supervisor's differ`,
          fix: "give both the same token (deploy/secrets/supervisor_token in the Compose stack), then restart them",
        },
      ];
    }
    return [
      {
        name: "supervisor",
        outcome: "problem",
        detail: `the supervisor at ${url} could not answer: ${error.message}`,
        fix:
          error.code === "SUPERVISOR_UNREACHABLE"
            ? "start it (docker compose up -d supervisor), or point SANDBOX_SUPERVISOR_URL at it"
            : "read the supervisor's log; it needs the Docker socket",
      },
    ];
  }
}
