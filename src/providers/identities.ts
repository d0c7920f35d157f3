import type { Kysely } from 'kysely';
import { deleteUserIdentity, findUserIdentity, listUserIdentities, otherSignInWays, type ListedIdentity } from './identity-repository.js';
import type { Transact } from '../db/transaction.js';
import type { Database } from '../db/types.js';
import { Conflict, NotFound } from '../errors.js';
import { recordEvent } from '../audit/audit-events.js';
import type { Principal } from '../principal.js';

/**
 * A user's own upstream identities: listed, and unlinked unless the identity is the last way left
 * to sign in (a password the user knows, another identity or a passkey must remain). Linking is a
 * provider flow (ProviderSignIn.startLink).
 */
export class LinkedIdentities {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly transact: Transact,
  ) {}

  list(principal: Principal): Promise<ListedIdentity[]> {
    return listUserIdentities(this.db, principal.user.id);
  }

  async unlink(principal: Principal, id: number): Promise<void> {
    const userId = principal.user.id;
    await this.transact(async (trx) => {
      const ways = await otherSignInWays(trx, userId, id);
      const identity = await findUserIdentity(trx, userId, id);
      if (!identity) throw new NotFound('Identity not found');
      if (!ways.password && ways.identities === 0 && ways.passkeys === 0)
        throw new Conflict(
          'This identity is the last way to sign in to the account: set a password (forgot-password) or link another provider first',
        );
      await deleteUserIdentity(trx, userId, id);
      await recordEvent(trx, {
        type: 'identity.unlinked',
        actor: userId,
        subject: userId,
        details: { provider: identity.provider, identity_id: identity.id, subject: identity.subject },
        origin: principal.client,
      });
    });
  }
}
