import type { Executor } from '../db/types.js';

/**
 * Replaces a user's password hash with a stronger one of the same password, only while the stored
 * hash is still `previous`: a password changed meanwhile is never overwritten. `updated_at` stays,
 * since nothing about the account changed. True when the row was updated.
 */
export async function replacePasswordHash(db: Executor, id: number, previous: string, next: string): Promise<boolean> {
  const result = await db
    .updateTable('users')
    .set({ password_hash: next })
    .where('id', '=', id)
    .where('password_hash', '=', previous)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}
