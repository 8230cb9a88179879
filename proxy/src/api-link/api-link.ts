import { type CapabilityKeyring, mintServiceToken, type ReplayGuard } from "../capability/index.ts";

const REQUEST_TIMEOUT_MS = 5_000;

/** Whom a capability was issued to, and where: what access is checked for. */
export interface AccessGrant {
  subject: string;
  workspaceId: string;
}

export interface ScreenAccess {
  modes: readonly string[];
  /** When the access ends by itself, with no change for api to announce (a key's expiry). */
  endsAt: Date | null;
  /** The workspace's embed origins: other sites whose pages may hold its sockets. */
  origins: readonly string[];
}

export const grantKey = (grant: AccessGrant): string => `${grant.workspaceId}\n${grant.subject}`;
// Service tokens live 60 s; a fresh one is minted well before the old one could expire in flight.
const TOKEN_REUSE_MS = 30_000;

/**
 * The proxy's only link to state: api answers for token ids (single use across every proxy
 * replica) and for who may still hold a socket, and streams control-lease and access changes. Each call proves itself with a service token.
 */
export class ApiLink implements ReplayGuard {
  private token: { value: string; mintedAt: number } | undefined;

  constructor(
    readonly apiUrl: string,
    private readonly keyring: CapabilityKeyring,
  ) {}

  async authorization(): Promise<string> {
    const now = Date.now();
    if (!this.token || now - this.token.mintedAt > TOKEN_REUSE_MS)
      this.token = { value: await mintServiceToken(this.keyring, "proxy"), mintedAt: now };
    return `Bearer ${this.token.value}`;
  }

  /** Tells api these computers have open screen sockets: someone is using them. */
  async reportActivity(computerIds: readonly string[]): Promise<void> {
    const response = await fetch(`${this.apiUrl}/internal/proxy/activity`, {
      method: "POST",
      headers: { authorization: await this.authorization(), "content-type": "application/json" },
      body: JSON.stringify({ computerIds }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    await response.body?.cancel();
    if (response.status !== 204) throw new Error(`api answered ${response.status} to an activity report`);
  }

  /**
   * The modes each subject may still hold a screen socket in, in its workspace, as api says now,
   * by grantKey; throws when api cannot answer (callers fail closed).
   */
  async screenAccess(grants: readonly AccessGrant[]): Promise<Map<string, ScreenAccess>> {
    const response = await fetch(`${this.apiUrl}/internal/proxy/access`, {
      method: "POST",
      headers: { authorization: await this.authorization(), "content-type": "application/json" },
      body: JSON.stringify({ grants: distinct(grants) }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    if (response.status !== 200) {
      await response.body?.cancel();
      throw new Error(`api answered ${response.status} to an access check`);
    }
    const body = (await response.json()) as {
      grants: Array<AccessGrant & { modes: string[]; endsAt: string | null; origins: string[] }>;
    };
    return new Map(
      body.grants.map((grant) => [
        grantKey(grant),
        {
          modes: grant.modes,
          endsAt: grant.endsAt === null ? null : new Date(grant.endsAt),
          origins: grant.origins,
        },
      ]),
    );
  }

  /** True the first time any replica presents this token id; fails closed when api cannot answer. */
  async claim(jti: string, expiresAt: Date): Promise<boolean> {
    const response = await fetch(`${this.apiUrl}/internal/proxy/redemptions`, {
      method: "POST",
      headers: { authorization: await this.authorization(), "content-type": "application/json" },
      body: JSON.stringify({ jti, expiresAt: expiresAt.toISOString() }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    await response.body?.cancel();
    if (response.status === 201) return true;
    if (response.status === 409) return false;
    throw new Error(`api answered ${response.status} to a redemption`);
  }
}

function distinct(grants: readonly AccessGrant[]): AccessGrant[] {
  const byKey = new Map(
    grants.map(({ subject, workspaceId }) => [grantKey({ subject, workspaceId }), { subject, workspaceId }]),
  );
  return [...byKey.values()];
}
