import { sql } from 'kysely';
import type { ChallengePurpose, Executor, MfaChallengeRow } from '../db/types.js';

export interface NewChallenge {
  id: string;
  purpose: ChallengePurpose;
  userId: number | null;
  tokenHash?: string;
  challenge?: string;
  userHandle?: string;
  /** For purpose `mfa`: how the first step was taken, when not with a password. */
  firstAmr?: readonly string[];
  /** The upstream provider whose sign-in the second step finishes. */
  provider?: string;
  /** The organisation the login named. */
  organizationId?: number;
  expiresAt: Date;
}

/** Expired challenges cleared by each new one: more than are made meanwhile, so the table stays small. */
const CLEARED_PER_INSERT = 100;

/**
 * Keeps a new challenge, and deletes in the same statement up to CLEARED_PER_INSERT challenges that
 * expired before `now` (used ones expire minutes after they were made): challenges clear themselves
 * away as they are made, so no purge of their own is needed. Rows another transaction holds are left
 * to the next insert.
 */
export async function insertChallenge(db: Executor, c: NewChallenge, now: Date): Promise<void> {
  await db
    .with('cleared', (db) =>
      db
        .deleteFrom('mfa_challenges')
        .where('id', 'in', (eb) =>
          eb.selectFrom('mfa_challenges').select('id').where('expires_at', '<', now).limit(CLEARED_PER_INSERT).forUpdate().skipLocked(),
        ),
    )
    .insertInto('mfa_challenges')
    .values({
      id: c.id,
      purpose: c.purpose,
      user_id: c.userId,
      token_hash: c.tokenHash ?? null,
      challenge: c.challenge ?? null,
      user_handle: c.userHandle ?? null,
      first_amr: c.firstAmr ? [...c.firstAmr] : null,
      provider: c.provider ?? null,
      organization_id: c.organizationId ?? null,
      expires_at: c.expiresAt,
    })
    .execute();
}

/** The unused, unexpired second step of a login whose mfa_token hashes to `tokenHash`. */
export function findLiveMfaChallenge(db: Executor, tokenHash: string, now: Date): Promise<MfaChallengeRow | undefined> {
  return db
    .selectFrom('mfa_challenges')
    .selectAll()
    .where('token_hash', '=', tokenHash)
    .where('purpose', '=', 'mfa')
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
}

/** Puts a new WebAuthn challenge on a live login step; false when the step is no longer live. */
export async function setMfaWebAuthnChallenge(db: Executor, id: string, challenge: string, now: Date): Promise<boolean> {
  const updated = await db
    .updateTable('mfa_challenges')
    .set({ challenge })
    .where((eb) => eb.and({ id, used_at: null }))
    .where('expires_at', '>', now)
    .returning('id')
    .executeTakeFirst();
  return updated !== undefined;
}

/**
 * Counts a wrong proof against a login step and spends its WebAuthn challenge; the step is voided
 * once `maxFailures` is reached. Returns the failures so far.
 */
export async function recordMfaFailure(db: Executor, id: string, maxFailures: number): Promise<number> {
  const row = await db
    .updateTable('mfa_challenges')
    .set((eb) => ({
      failures: eb('failures', '+', 1),
      challenge: null,
      used_at: sql`case when failures + 1 >= ${maxFailures}::int then coalesce(used_at, now()) else used_at end`,
    }))
    .where('id', '=', id)
    .returning('failures')
    .executeTakeFirst();
  return row?.failures ?? maxFailures;
}

/**
 * Spends a challenge, atomically, if it is unused and unexpired; returns it, or undefined. Two
 * requests with one challenge cannot both succeed.
 */
export function consumeChallenge(
  db: Executor,
  where: { purpose: ChallengePurpose; id?: string; userId?: number; challenge?: string },
  now: Date,
): Promise<MfaChallengeRow | undefined> {
  let q = db
    .updateTable('mfa_challenges')
    .set({ used_at: sql`now()` })
    .where('purpose', '=', where.purpose)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now);
  if (where.id !== undefined) q = q.where('id', '=', where.id);
  if (where.userId !== undefined) q = q.where('user_id', '=', where.userId);
  if (where.challenge !== undefined) q = q.where('challenge', '=', where.challenge);
  return q.returningAll().executeTakeFirst();
}

/** Voids every live challenge of the user (their factors were reset). */
export async function voidUserChallenges(db: Executor, userId: number): Promise<void> {
  await db
    .updateTable('mfa_challenges')
    .set({ used_at: sql`now()` })
    .where((eb) => eb.and({ user_id: userId, used_at: null }))
    .execute();
}
