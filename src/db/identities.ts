import { sql, type Generated, type Insertable, type Selectable } from 'kysely';
import type { Executor, GivenTimestamp, NullableTimestamp, Timestamp } from './types';

// Type aliases rather than interfaces: withTables wants types with an implicit index signature.
export type UserIdentityTable = {
  id: Generated<number>;
  user_id: number;
  provider_id: number;
  subject: string;
  email: string | null;
  created_at: Timestamp;
  last_used_at: NullableTimestamp;
};

export type ProviderFlowTable = {
  id: Generated<number>;
  provider_id: number;
  state_hash: string;
  nonce: string | null;
  code_verifier_sealed: string;
  redirect_to: string;
  code_challenge: string;
  created_at: Timestamp;
  expires_at: GivenTimestamp;
  used_at: NullableTimestamp;
};

export type ProviderCodeTable = {
  id: Generated<number>;
  code_hash: string;
  user_id: number;
  provider_id: number;
  code_challenge: string;
  created_at: Timestamp;
  expires_at: GivenTimestamp;
  used_at: NullableTimestamp;
};

type IdentityTables = { user_identities: UserIdentityTable; provider_flows: ProviderFlowTable; provider_codes: ProviderCodeTable };

export type UserIdentityRow = Selectable<UserIdentityTable>;
export type ProviderFlowRow = Selectable<ProviderFlowTable>;
export type ProviderCodeRow = Selectable<ProviderCodeTable>;

const tables = (db: Executor) => db.withTables<IdentityTables>();

export function findIdentity(db: Executor, providerId: number, subject: string): Promise<UserIdentityRow | undefined> {
  return tables(db)
    .selectFrom('user_identities')
    .selectAll()
    .where('provider_id', '=', providerId)
    .where('subject', '=', subject)
    .executeTakeFirst();
}

/** The new identity, or undefined when the provider's subject is already linked. */
export function insertIdentity(db: Executor, row: Insertable<UserIdentityTable>): Promise<UserIdentityRow | undefined> {
  return tables(db)
    .insertInto('user_identities')
    .values({ ...row, last_used_at: sql`now()` })
    .onConflict((oc) => oc.columns(['provider_id', 'subject']).doNothing())
    .returningAll()
    .executeTakeFirst();
}

export async function recordIdentityUse(db: Executor, id: number, email: string | null): Promise<void> {
  await tables(db)
    .updateTable('user_identities')
    .set({ last_used_at: sql`now()`, email })
    .where('id', '=', id)
    .execute();
}

export async function insertFlow(db: Executor, row: Insertable<ProviderFlowTable>): Promise<void> {
  await tables(db).insertInto('provider_flows').values(row).execute();
}

/** Spends the live sign-in under way whose state hashes to `stateHash`, atomically; undefined when there is none. */
export function takeFlow(db: Executor, stateHash: string): Promise<ProviderFlowRow | undefined> {
  return tables(db)
    .updateTable('provider_flows')
    .set({ used_at: sql`now()` })
    .where('state_hash', '=', stateHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .returningAll()
    .executeTakeFirst();
}

export async function insertCode(db: Executor, row: Insertable<ProviderCodeTable>): Promise<void> {
  await tables(db).insertInto('provider_codes').values(row).execute();
}

/** Spends the live code whose hash this is, atomically: one attempt per code. */
export function takeCode(db: Executor, codeHash: string): Promise<ProviderCodeRow | undefined> {
  return tables(db)
    .updateTable('provider_codes')
    .set({ used_at: sql`now()` })
    .where('code_hash', '=', codeHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .returningAll()
    .executeTakeFirst();
}
