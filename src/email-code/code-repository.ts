import { sql } from 'kysely';
import type { EmailCodeRow, Executor } from '../db/types.js';

export interface NewEmailCode {
  email: string;
  userId: number | null;
  codeHash: string;
  tokenHash: string;
  expiresAt: Date;
  /** The provider sign-in this code completes, for the proof of a provider's address. */
  providerCodeId?: number;
}

/**
 * Takes the address's lock for the rest of the transaction and counts the codes sent to it within
 * the last `seconds` and within the last hour, used or not: two requests at once see each other's
 * code. The lock is an advisory one, so that an address without an account has one too.
 */
export async function recentEmailCodes(
  db: Executor,
  email: string,
  seconds: number,
): Promise<{ withinSeconds: number; withinHour: number }> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`email-code\n${email}`}, 0))`.execute(db);
  return db
    .selectFrom('email_codes')
    .select([
      sql<number>`(count(*) filter (where created_at > now() - make_interval(secs => ${seconds})))::int`.as('withinSeconds'),
      sql<number>`count(*)::int`.as('withinHour'),
    ])
    .where('email', '=', email)
    .where('created_at', '>', sql<Date>`now() - interval '1 hour'`)
    .executeTakeFirstOrThrow();
}

/** Keeps a new code, voiding the earlier ones of the address: only the newest works. */
export async function insertEmailCode(db: Executor, code: NewEmailCode): Promise<void> {
  await voidEmailCodes(db, code.email);
  await db
    .insertInto('email_codes')
    .values({
      email: code.email,
      user_id: code.userId,
      code_hash: code.codeHash,
      token_hash: code.tokenHash,
      expires_at: code.expiresAt,
      provider_code_id: code.providerCodeId ?? null,
    })
    .execute();
}

/** Voids every unused code of the address. */
export async function voidEmailCodes(db: Executor, email: string): Promise<void> {
  await db
    .updateTable('email_codes')
    .set({ used_at: sql`now()` })
    .where('email', '=', email)
    .where('used_at', 'is', null)
    .execute();
}

/** The address's unused, unexpired sign-in code, locked for the rest of the transaction. */
export function findLiveEmailCode(db: Executor, email: string): Promise<EmailCodeRow | undefined> {
  return db
    .selectFrom('email_codes')
    .selectAll()
    .where('email', '=', email)
    .where('provider_code_id', 'is', null)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .orderBy('id', 'desc')
    .limit(1)
    .forUpdate()
    .executeTakeFirst();
}

/** Spends a live code by its id; false when it was spent, voided or expired meanwhile. */
export async function useEmailCode(db: Executor, id: number): Promise<boolean> {
  const row = await db
    .updateTable('email_codes')
    .set({ used_at: sql`now()` })
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** The address of the live code whose link token hashes to `tokenHash`, without spending it. */
export async function findLiveEmailCodeEmail(db: Executor, tokenHash: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('email_codes')
    .select('email')
    .where('token_hash', '=', tokenHash)
    .where('provider_code_id', 'is', null)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
  return row?.email;
}

/**
 * Spends the live code whose link token hashes to `tokenHash`, atomically: of two requests with one
 * token, one gets the row.
 */
export function useEmailCodeToken(db: Executor, tokenHash: string): Promise<EmailCodeRow | undefined> {
  return db
    .updateTable('email_codes')
    .set({ used_at: sql`now()` })
    .where('token_hash', '=', tokenHash)
    .where('provider_code_id', 'is', null)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .returningAll()
    .executeTakeFirst();
}

/** The live code proving a provider's address whose verification token hashes to `tokenHash`, locked for the rest of the transaction. */
export function findLiveProviderEmailCode(db: Executor, tokenHash: string): Promise<EmailCodeRow | undefined> {
  return db
    .selectFrom('email_codes')
    .selectAll()
    .where('token_hash', '=', tokenHash)
    .where('provider_code_id', 'is not', null)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .forUpdate()
    .executeTakeFirst();
}

/** Counts a wrong code against a live one, voiding it at `maxFailures`; returns the failures so far. */
export async function recordEmailCodeFailure(db: Executor, id: number, maxFailures: number): Promise<number> {
  const row = await db
    .updateTable('email_codes')
    .set((eb) => ({
      failures: eb('failures', '+', 1),
      used_at: sql`case when failures + 1 >= ${maxFailures}::int then coalesce(used_at, now()) else used_at end`,
    }))
    .where('id', '=', id)
    .returning('failures')
    .executeTakeFirst();
  return row?.failures ?? maxFailures;
}
