import { sql } from 'kysely';
import type { Executor, FactorType, MfaFactorRow, NewMfaFactorRow } from '../db/types.js';

export function insertFactor(db: Executor, row: NewMfaFactorRow): Promise<MfaFactorRow> {
  return db.insertInto('mfa_factors').values(row).returningAll().executeTakeFirstOrThrow();
}

/** One factor of the user, confirmed or not; undefined for another user's or an unknown id. */
export function findFactor(db: Executor, userId: number, id: number): Promise<MfaFactorRow | undefined> {
  return db.selectFrom('mfa_factors').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
}

/** The user's confirmed factors, oldest first; optionally of one type. */
export function listConfirmedFactors(db: Executor, userId: number, type?: FactorType): Promise<MfaFactorRow[]> {
  let q = db.selectFrom('mfa_factors').selectAll().where('user_id', '=', userId).where('confirmed_at', 'is not', null);
  if (type) q = q.where('type', '=', type);
  return q.orderBy('id').execute();
}

/** Removes the user's TOTP factors still waiting for their first code. */
export async function deletePendingTotpFactors(db: Executor, userId: number): Promise<void> {
  await db.deleteFrom('mfa_factors').where('user_id', '=', userId).where('type', '=', 'totp').where('confirmed_at', 'is', null).execute();
}

/**
 * Confirms a pending TOTP factor and records `step` as its last accepted code, atomically: two
 * confirmations of one factor cannot both succeed.
 */
export function confirmTotpFactor(db: Executor, id: number, step: number): Promise<MfaFactorRow | undefined> {
  return db
    .updateTable('mfa_factors')
    .set({ confirmed_at: sql`now()`, last_used_at: sql`now()`, totp_last_step: step })
    .where('id', '=', id)
    .where('confirmed_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/**
 * Takes a code's time step for a confirmed TOTP factor, only if it is later than every step taken
 * before: a code is accepted once, and never an older one after a newer. False when it was not.
 */
export async function takeTotpStep(db: Executor, id: number, step: number): Promise<boolean> {
  const taken = await db
    .updateTable('mfa_factors')
    .set({ totp_last_step: step, last_used_at: sql`now()` })
    .where('id', '=', id)
    .where('confirmed_at', 'is not', null)
    .where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', step as never)]))
    .returning('id')
    .executeTakeFirst();
  return taken !== undefined;
}

export function deleteFactor(db: Executor, userId: number, id: number): Promise<MfaFactorRow | undefined> {
  return db.deleteFrom('mfa_factors').where('id', '=', id).where('user_id', '=', userId).returningAll().executeTakeFirst();
}

/** Removes every factor of the user; returns how many. */
export async function deleteUserFactors(db: Executor, userId: number): Promise<number> {
  const result = await db.deleteFrom('mfa_factors').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows);
}

export async function countConfirmedFactors(db: Executor, userId: number): Promise<number> {
  const row = await db
    .selectFrom('mfa_factors')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('user_id', '=', userId)
    .where('confirmed_at', 'is not', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A registered passkey by its credential id (base64url). */
export function findPasskey(db: Executor, credentialId: string): Promise<MfaFactorRow | undefined> {
  return db
    .selectFrom('mfa_factors')
    .selectAll()
    .where('credential_id', '=', credentialId)
    .where('type', '=', 'webauthn')
    .executeTakeFirst();
}

/**
 * Records a passkey's use with the counter its authenticator reported, only if the stored counter
 * is still the one the assertion was checked against: of two assertions racing, one wins.
 */
export async function recordPasskeyUse(db: Executor, id: number, checkedCount: number, newCount: number): Promise<boolean> {
  const updated = await db
    .updateTable('mfa_factors')
    .set({ sign_count: newCount, last_used_at: sql`now()` })
    .where('id', '=', id)
    .where('sign_count', '=', checkedCount as never)
    .returning('id')
    .executeTakeFirst();
  return updated !== undefined;
}

/** The WebAuthn user handle the user's passkeys were made for, if they have any. */
export async function findUserHandle(db: Executor, userId: number): Promise<string | undefined> {
  const row = await db
    .selectFrom('mfa_factors')
    .select('user_handle')
    .where('user_id', '=', userId)
    .where('user_handle', 'is not', null)
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  return row?.user_handle ?? undefined;
}

/** Replaces the user's recovery codes with these hashes. */
export async function replaceRecoveryCodes(db: Executor, userId: number, codeHashes: string[]): Promise<void> {
  await deleteRecoveryCodes(db, userId);
  await db
    .insertInto('mfa_recovery_codes')
    .values(codeHashes.map((code_hash) => ({ user_id: userId, code_hash })))
    .execute();
}

export async function deleteRecoveryCodes(db: Executor, userId: number): Promise<void> {
  await db.deleteFrom('mfa_recovery_codes').where('user_id', '=', userId).execute();
}

/** Marks an unused recovery code used, atomically; false when the user has no such unused code. */
export async function useRecoveryCode(db: Executor, userId: number, codeHash: string): Promise<boolean> {
  const used = await db
    .updateTable('mfa_recovery_codes')
    .set({ used_at: sql`now()` })
    .where('user_id', '=', userId)
    .where('code_hash', '=', codeHash)
    .where('used_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
  return used !== undefined;
}

export async function countRecoveryCodes(db: Executor, userId: number): Promise<number> {
  const row = await db
    .selectFrom('mfa_recovery_codes')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where((eb) => eb.and({ user_id: userId, used_at: null }))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
