import { sql, type ColumnType, type Generated, type Insertable, type Selectable } from 'kysely';
import type { Executor, GivenTimestamp, NullableTimestamp, Timestamp } from '../db/types.js';

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
  /** For a link by hand: the user the identity joins; null for a sign-in. */
  link_user_id: ColumnType<number | null, number | null | undefined, number | null>;
  created_at: Timestamp;
  expires_at: GivenTimestamp;
  used_at: NullableTimestamp;
};

export type ProviderCodeTable = {
  id: Generated<number>;
  code_hash: string;
  /** Null while the provider's address waits for its mailed code: the account is chosen once it is proven. */
  user_id: number | null;
  provider_id: number;
  code_challenge: string;
  /** For a link by hand: the provider's subject (and e-mail) to link when the code is exchanged. */
  link_subject: ColumnType<string | null, string | null | undefined, string | null>;
  link_email: ColumnType<string | null, string | null | undefined, string | null>;
  /** For a sign-in waiting for its mailed code: the name the provider gave. */
  link_name: ColumnType<string | null, string | null | undefined, string | null>;
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

/** A code by its id, spent or not: the provider sign-in a mailed code completes. */
export function findCodeById(db: Executor, id: number): Promise<ProviderCodeRow | undefined> {
  return tables(db).selectFrom('provider_codes').selectAll().where('id', '=', id).executeTakeFirst();
}

/** An identity as its user sees it: with the slug of its provider. */
export type ListedIdentity = Pick<UserIdentityRow, 'id' | 'subject' | 'email' | 'created_at' | 'last_used_at'> & { provider: string };

const withProvider = (db: Executor) =>
  tables(db)
    .withTables<{ identity_providers: { id: number; slug: string } }>()
    .selectFrom('user_identities')
    .innerJoin('identity_providers', 'identity_providers.id', 'user_identities.provider_id')
    .select([
      'user_identities.id',
      'identity_providers.slug as provider',
      'user_identities.subject',
      'user_identities.email',
      'user_identities.created_at',
      'user_identities.last_used_at',
    ]);

/** The user's identities, oldest first. */
export function listUserIdentities(db: Executor, userId: number): Promise<ListedIdentity[]> {
  return withProvider(db).where('user_identities.user_id', '=', userId).orderBy('user_identities.id').execute();
}

/** One of the user's identities; undefined when it is unknown or another user's. */
export function findUserIdentity(db: Executor, userId: number, id: number): Promise<ListedIdentity | undefined> {
  return withProvider(db).where('user_identities.user_id', '=', userId).where('user_identities.id', '=', id).executeTakeFirst();
}

/** Removes one of the user's identities; false when there was none to remove. */
export async function deleteUserIdentity(db: Executor, userId: number, id: number): Promise<boolean> {
  const result = await tables(db).deleteFrom('user_identities').where('user_id', '=', userId).where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/**
 * The ways the user has to sign in besides the identity `exceptIdentityId`: a password they know,
 * other identities, passkeys (discoverable credentials, which sign in alone). The user's row is
 * locked until the transaction ends, so that two removals cannot each leave the other as the last.
 */
export async function otherSignInWays(
  db: Executor,
  userId: number,
  exceptIdentityId: number,
): Promise<{ password: boolean; identities: number; passkeys: number }> {
  // The lock first, on its own: a statement run after it reads what the removal that held it left
  // (under READ COMMITTED, one statement that waited for the lock would count from before it).
  await sql`select id from users where id = ${userId} for update`.execute(db);
  const { rows } = await sql<{ password: boolean; identities: number; passkeys: number }>`
    select
      u.password_set as password,
      (select count(*)::int from user_identities i where i.user_id = u.id and i.id <> ${exceptIdentityId}) as identities,
      (select count(*)::int from mfa_factors f where f.user_id = u.id and f.type = 'webauthn' and f.confirmed_at is not null) as passkeys
    from users u
    where u.id = ${userId}`.execute(db);
  return rows[0] ?? { password: false, identities: 0, passkeys: 0 };
}
