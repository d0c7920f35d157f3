import type { Executor, NewUserRow, UserRow } from '../db/types.js';

export type ImportedUser = Pick<UserRow, 'id' | 'email' | 'role' | 'is_active'>;

/**
 * Inserts the users in one statement; each row is created whole or skipped when its e-mail is taken
 * (by an existing account or an earlier row). Returns the rows created.
 */
export function insertImportedUsers(db: Executor, rows: NewUserRow[]): Promise<ImportedUser[]> {
  if (rows.length === 0) return Promise.resolve([]);
  return db
    .insertInto('users')
    .values(rows)
    .onConflict((oc) => oc.column('email').doNothing())
    .returning(['id', 'email', 'role', 'is_active'])
    .execute();
}
