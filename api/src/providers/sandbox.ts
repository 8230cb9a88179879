import type { Database } from "@cubicle/db";
import type { Kysely } from "kysely";
import type { ApiEnv } from "../config/env.ts";
import type { Logger } from "../observability/logger.ts";
import type { ProviderKind, SandboxProvider } from "./contract.ts";
import { buildProvider, chooseProvider, type ProviderChoice } from "./factory.ts";

type Shutdownable = SandboxProvider & { shutdown?: () => Promise<void> };

/**
 * The API's door to computers: which provider is in effect right now (the computer-host setting
 * can change while the API runs) and one built instance per provider kind.
 */
export class Sandbox {
  private readonly built = new Map<ProviderKind, Shutdownable>();

  constructor(
    private readonly env: ApiEnv,
    private readonly supervisorToken: string | undefined,
    private readonly db: Kysely<Database>,
    private readonly logger: Logger,
  ) {}

  /** Builds the effective provider now, so that a bad setup stops start-up instead of a request. */
  async start(): Promise<ProviderChoice> {
    const choice = await this.choice();
    this.provider(choice.effective);
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

  provider(kind: ProviderKind): SandboxProvider {
    let provider = this.built.get(kind);
    if (!provider) {
      provider = buildProvider(kind, { env: this.env, supervisorToken: this.supervisorToken });
      this.built.set(kind, provider);
    }
    return provider;
  }

  async shutdown(): Promise<void> {
    await Promise.all([...this.built.values()].map((provider) => provider.shutdown?.()));
  }
}
