import type { ComputerState } from "@cubicle/db";
import type { ProviderChoice } from "@cubicle/providers";
import type { EgressLevel } from "@cubicle/providers/contract";
import { type UnenforcedPolicy, unenforcedPolicies } from "../egress/unenforced.ts";
import { createRouter } from "../http/router.ts";
import { serviceOnly } from "../internal/service-only.ts";
import type { ProviderTrouble } from "../sandbox/sandbox.ts";

/** What `cubicle doctor` asks of the running api: what it chose, and whether that works. */
export interface DoctorView {
  version: string;
  /** The provider this api runs new computers on, as it decided it (not as the doctor would). */
  provider: ProviderChoice;
  /** Null when the provider took Cubicle's credential with one call; else why it did not. */
  access: ProviderTrouble | null;
  /** The computers the current provider has made, each of which has a home there. */
  computers: { id: string; workspaceId: string; homeKey: string; state: ComputerState }[];
  /** The egress levels the provider enforces, and the stored policies it cannot. */
  egress: { levels: EgressLevel[]; unenforced: UnenforcedPolicy[] };
}

/**
 * Not part of the public API (no /v1, not in the OpenAPI document): answers only a doctor token,
 * which only a holder of the screen capability key can mint.
 */
export function doctorRoutes() {
  const app = createRouter();
  app.use("/internal/doctor", serviceOnly("doctor"));
  app.get("/internal/doctor", async (c) => {
    const { sandbox, database, version } = c.var.deps;
    const provider = await sandbox.choice();
    const access = await sandbox.access();
    const current = await sandbox.current();
    const computers = await database.db
      .selectFrom("computers")
      .select(["id", "workspace_id", "home_key", "state"])
      .where("provider_kind", "=", provider.effective)
      .where("provider_ref", "is not", null)
      .orderBy("home_key")
      .execute();
    const view: DoctorView = {
      version,
      provider,
      access,
      computers: computers.map((row) => ({
        id: row.id,
        workspaceId: row.workspace_id,
        homeKey: row.home_key,
        state: row.state,
      })),
      egress: {
        levels: [...current.capabilities.egress],
        unenforced: await unenforcedPolicies(database.db, current),
      },
    };
    return c.json(view, 200);
  });
  return app;
}
