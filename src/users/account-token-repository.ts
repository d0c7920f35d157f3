import { sql } from 'kysely';
import type { Executor, TokenPurpose } from '../db/types.js';

export interface NewAccountToken {
  userId: number;
  purpose: TokenPurpose;
  tokenHash: string;
  email: string;
  expiresAt: Date;
}

export async function insertAccountToken(db: Executor, token: NewAccountToken): Promise<void> {
  await db
    .insertInto('account_tokens')
    .values({ user_id: token.userId, purpose: token.purpose, token_hash: token.tokenHash, email: token.email, expires_at: token.expiresAt })
    .execute();
}

/**
 * Voids every unused token of a purpose for a user, so only the newest one works; with
 * `exceptEmail`, the tokens issued for that address stay.
 */
export async function voidAccountTokens(
  db: Executor,
  userId: number,
  purpose: TokenPurpose,
  options: { exceptEmail?: string } = {},
): Promise<void> {
  let q = db
    .updateTable('account_tokens')
    .set({ used_at: sql`now()` })
    .where('user_id', '=', userId)
    .where('purpose', '=', purpose)
    .where('used_at', 'is', null);
  if (options.exceptEmail !== undefined) q = q.where('email', '!=', options.exceptEmail);
  await q.execute();
}

/**
 * Marks a token used, atomically, if it is unused and unexpired; returns whom it was for. Two
 * requests with one token cannot both succeed.
 */
export function consumeAccountToken(
  db: Executor,
  tokenHash: string,
  purpose: TokenPurpose,
): Promise<{ user_id: number; email: string } | undefined> {
  return db
    .updateTable('account_tokens')
    .set({ used_at: sql`now()` })
    .where('token_hash', '=', tokenHash)
    .where('purpose', '=', purpose)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .returning(['user_id', 'email'])
    .executeTakeFirst();
}

/**
 * Locks the user's row for the rest of the transaction and counts the tokens of a purpose issued to
 * them within the last `seconds` and within the last hour, used or not: two requests at once see
 * each other's token.
 */
export async function recentAccountTokens(
  db: Executor,
  userId: number,
  purpose: TokenPurpose,
  seconds: number,
): Promise<{ withinSeconds: number; withinHour: number }> {
  await db.selectFrom('users').select('id').where('id', '=', userId).forUpdate().execute();
  return db
    .selectFrom('account_tokens')
    .select([
      sql<number>`(count(*) filter (where created_at > now() - make_interval(secs => ${seconds})))::int`.as('withinSeconds'),
      sql<number>`count(*)::int`.as('withinHour'),
    ])
    .where('user_id', '=', userId)
    .where('purpose', '=', purpose)
    .where('created_at', '>', sql<Date>`now() - interval '1 hour'`)
    .executeTakeFirstOrThrow();
}
