import type { Database } from "@cubicle/db";
import { buildProvider, chooseProvider, type ProviderChoice } from "@cubicle/providers";
import { ProviderError, type ProviderKind, type SandboxProvider } from "@cubicle/providers/contract";
import type { Kysely } from "kysely";
import type { ApiEnv } from "../config/env.ts";
import type { Logger } from "../observability/logger.ts";

type Shutdownable = SandboxProvider & { shutdown?: () => Promise<void> };

/** Why the provider in effect could not be used: its error code and what it said. */
export interface ProviderTrouble {
  code: string;
  detail: string;
}

/** How long /health waits for the provider before saying it does not answer. */
const HEALTH_ACCESS_DEADLINE_MS = 3_000;
/** How long one answer serves /health. */
const HEALTH_ACCESS_REMEMBERED_MS = 5_000;

/**
 * The API's door to computers: which provider is in effect right now (the computer-host setting
 * can change while the API runs) and one built instance per provider kind.
 */
export class Sandbox {
  private readonly built = new Map<ProviderKind, Promise<Shutdownable>>();
  private lastHealthAccess?: { askedAt: number; trouble: Promise<ProviderTrouble | null> };

  constructor(
    private readonly env: ApiEnv,
    private readonly supervisorToken: string | undefined,
    private readonly db: Kysely<Database>,
    private readonly logger: Logger,
  ) {}

  /** Builds the effective provider now, so that a bad setup stops start-up instead of a request. */
  async start(): Promise<ProviderChoice> {
    const choice = await this.choice();
    await this.provider(choice.effective);
    if (choice.reason) {
      this.logger.warn(
        { configured: choice.configured, effective: choice.effective },
        `sandbox provider ${choice.configured} runs as ${choice.effective}: ${choice.reason}`,
      );
    }
    return choice;
  }

  async choice(): Promise<ProviderChoice> {
    const settings = await this.db
      .selectFrom("deployment_settings")
      .select("computer_host")
      .executeTakeFirstOrThrow();
    return chooseProvider(this.env.sandbox, settings.computer_host);
  }

  /** The provider new provisions use. */
  async current(): Promise<SandboxProvider> {
    return this.provider((await this.choice()).effective);
  }

  /** Whether the provider in effect answers and takes Cubicle's credential: null if so, else why not. */
  async access(): Promise<ProviderTrouble | null> {
    return (await this.current()).verifyAccess().then(
      () => null,
      (error: unknown) =>
        error instanceof ProviderError
          ? { code: error.code, detail: error.message }
          : { code: "PROVIDER_FAILURE", detail: error instanceof Error ? error.message : String(error) },
    );
  }

  /**
   * access() as /health reports it: bounded, so a supervisor that stopped answering shows in
   * seconds (not after the supervisor client's own 10 s liveness deadline); and one answer serves
   * every poll for a few seconds, so load balancers polling each replica do not become a stream of
   * calls to a vendor's API.
   */
  healthAccess(): Promise<ProviderTrouble | null> {
    const now = Date.now();
    if (this.lastHealthAccess && now - this.lastHealthAccess.askedAt < HEALTH_ACCESS_REMEMBERED_MS)
      return this.lastHealthAccess.trouble;
    let deadline: NodeJS.Timeout | undefined;
    const trouble = Promise.race([
      this.access(),
      new Promise<ProviderTrouble>((resolve) => {
        deadline = setTimeout(
          () =>
            resolve({
              code: "PROVIDER_UNAVAILABLE",
              detail: `the provider did not answer within ${HEALTH_ACCESS_DEADLINE_MS / 1000} s`,
            }),
          HEALTH_ACCESS_DEADLINE_MS,
        );
      }),
    ]).finally(() => clearTimeout(deadline));
    this.lastHealthAccess = { askedAt: now, trouble };
    return trouble;
  }

  provider(kind: ProviderKind): Promise<SandboxProvider> {
    let provider = this.built.get(kind);
    if (!provider) {
      provider = buildProvider(kind, {
        settings: this.env.sandbox,
        dataDir: this.env.dataDir,
        nodeEnv: this.env.nodeEnv,
        supervisorToken: this.supervisorToken,
      });
      // a kind that failed to build is tried again next time, not remembered as failed
      provider.catch(() => this.built.delete(kind));
      this.built.set(kind, provider);
    }
    return provider;
  }

  async shutdown(): Promise<void> {
    const built = await Promise.allSettled(this.built.values());
    await Promise.all(
      built.map((result) => (result.status === "fulfilled" ? result.value.shutdown?.() : undefined)),
    );
  }
}
