import type { Kysely } from 'kysely';
import type { Transact } from '../db/transaction.js';
import type { Database, SessionRow } from '../db/types.js';
import { NotFound } from '../errors.js';
import { requireAdmin, type Principal } from '../principal.js';
import { findUserById } from '../users/user-repository.js';
import { listLiveSessions } from './session-repository.js';
import { revokeUserSession } from './session-revocation.js';

/** Another user's sessions as an admin sees and ends them. */
export class UserSessions {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly transact: Transact,
  ) {}

  /** The user's live sessions, newest first; 404 for an unknown or deleted user. */
  async list(principal: Principal, userId: number): Promise<SessionRow[]> {
    requireAdmin(principal);
    const user = await findUserById(this.db, userId);
    if (!user || user.deleted_at !== null) throw new NotFound('User not found');
    return listLiveSessions(this.db, userId);
  }

  /** Ends one live session of the user, the admin as the event's actor; 404 unless it is one. */
  async revoke(principal: Principal, userId: number, sessionId: string): Promise<void> {
    requireAdmin(principal);
    await this.transact(async (trx) => {
      const revoked = await revokeUserSession(trx, { userId, sessionId, actor: principal.user.id, origin: principal.client });
      if (!revoked) throw new NotFound('Session not found');
    });
  }
}
