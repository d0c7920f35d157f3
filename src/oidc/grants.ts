import type { Kysely } from 'kysely';
import { deleteUserGrant, listUserGrants } from './record-repository.js';
import { endGrantInSessions } from './backchannel-logout.js';
import type { Transact } from '../db/transaction.js';
import type { Database } from '../db/types.js';
import { NotFound } from '../errors.js';
import { recordEvent } from '../audit/audit-events.js';
import type { Principal } from '../principal.js';

export interface GrantView {
  id: string;
  client_id: string;
  client_name: string;
  scopes: string[];
  created_at: Date;
}

/** What people allowed applications through the OpenID Connect provider, as they see and take it back. */
export class OauthGrants {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly transact: Transact,
  ) {}

  async list(principal: Principal): Promise<GrantView[]> {
    const rows = await listUserGrants(this.db, principal.user.id);
    return rows.map((row) => {
      const openid = row.payload.openid as { scope?: unknown } | undefined;
      const scope = typeof openid?.scope === 'string' ? openid.scope : '';
      return {
        id: row.id,
        client_id: row.client_id,
        client_name: row.client_name ?? row.client_id,
        scopes: scope.split(' ').filter((s) => s !== ''),
        created_at: row.created_at,
      };
    });
  }

  /** Revokes one of the caller's grants and every code and token issued through it. */
  async revoke(principal: Principal, grantId: string): Promise<void> {
    await this.transact(async (trx) => {
      const clientId = await deleteUserGrant(trx, principal.user.id, grantId);
      if (clientId === undefined) throw new NotFound('Grant not found');
      await endGrantInSessions(trx, principal.user.id, clientId, grantId);
      await recordEvent(trx, {
        type: 'oauth_grant.revoked',
        actor: principal.user.id,
        subject: principal.user.id,
        details: { client_id: clientId },
        origin: principal.client,
      });
    });
  }
}
