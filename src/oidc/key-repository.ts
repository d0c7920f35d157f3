import type { Generated } from 'kysely';
import type { Executor, Timestamp } from '../db/types.js';

// Type aliases rather than interfaces: withTables wants types with an implicit index signature.
export type OidcKeyTable = {
  id: Generated<number>;
  algorithm: string;
  private_key_sealed: string;
  created_at: Timestamp;
};

const keys = (db: Executor) => db.withTables<{ oidc_keys: OidcKeyTable }>();

/** The keys kept, oldest first: when two processes made one at once, both use the one that came first. */
export function listOidcKeys(db: Executor): Promise<Array<{ algorithm: string; private_key_sealed: string }>> {
  return keys(db).selectFrom('oidc_keys').select(['algorithm', 'private_key_sealed']).orderBy('id').execute();
}

export async function insertOidcKey(db: Executor, algorithm: string, sealed: string): Promise<void> {
  await keys(db).insertInto('oidc_keys').values({ algorithm, private_key_sealed: sealed }).execute();
}
