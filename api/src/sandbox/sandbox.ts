import type { Database } from "@cubicle/db";
import { buildProvider, chooseProvider, type ProviderChoice } from "@cubicle/providers";
import type { ProviderKind, SandboxProvider } from "@cubicle/providers/contract";
import type { Kysely } from "kysely";
import type { ApiEnv } from "../config/env.ts";
import type { Logger } from "../observability/logger.ts";

type Shutdownable = SandboxProvider & { shutdown?: () => Promise<void> };

/**
 * The API's door to computers: which provider is in effect right now (the computer-host setting
 * can change while the API runs) and one built instance per provider kind.
 */
export class Sandbox {
  private readonly built = new Map<ProviderKind, Promise<Shutdownable>>();

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
