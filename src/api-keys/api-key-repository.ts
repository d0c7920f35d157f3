import { CompiledQuery, sql } from 'kysely';
import { preparedStatement } from '../db/prepared.js';
import type { ApiKeyRow, Executor, UserRow } from '../db/types.js';

export interface NewApiKey {
  userId: number;
  name: string;
  prefix: string;
  keyHash: string;
  readOnly: boolean;
  expiresInDays: number;
}

/** Stores a new key; it expires `expiresInDays` after now, by the clock of the database, which checks it. */
export function insertApiKey(db: Executor, key: NewApiKey): Promise<ApiKeyRow> {
  return db
    .insertInto('api_keys')
    .values({
      user_id: key.userId,
      name: key.name,
      prefix: key.prefix,
      key_hash: key.keyHash,
      read_only: key.readOnly,
      // Whole days of 24 hours, whatever the database's time zone and its daylight saving.
      expires_at: sql<Date>`now() + make_interval(hours => ${key.expiresInDays * 24})`,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * Locks the user's row for the rest of the transaction and counts their keys, expired ones
 * included: two creations at once see each other's key.
 */
export async function lockAndCountApiKeys(db: Executor, userId: number): Promise<number> {
  await db.selectFrom('users').select('id').where('id', '=', userId).forUpdate().execute();
  const row = await db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Every key of the user, expired ones included, oldest first. */
export function listApiKeys(db: Executor, userId: number): Promise<ApiKeyRow[]> {
  return db.selectFrom('api_keys').selectAll().where('user_id', '=', userId).orderBy('id').execute();
}

/** Deletes one key of the user; undefined for another user's or an unknown id. */
export function deleteApiKey(db: Executor, userId: number, id: number): Promise<ApiKeyRow | undefined> {
  return db.deleteFrom('api_keys').where('id', '=', id).where('user_id', '=', userId).returningAll().executeTakeFirst();
}

/** Deletes every key of the user; returns how many. */
export async function deleteUserApiKeys(db: Executor, userId: number): Promise<number> {
  const result = await db.deleteFrom('api_keys').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The user behind a key, with what the key allows. */
export type KeyHolder = UserRow & {
  api_key_id: number;
  api_key_read_only: boolean;
  /** The key is past its `expires_at`: it no longer authenticates. */
  api_key_expired: boolean;
};

/**
 * The user behind a key, in one round trip: the key found by its hash, and its user live (not
 * deleted, active). The same statement records the key's use, at most once a minute, so that a busy
 * key does not write on every request; an expired key is reported, and not recorded as used.
 */
export async function findApiKeyHolder(db: Executor, keyHash: string): Promise<KeyHolder | undefined> {
  // Every request with a key runs this: written once, prepared once per connection (see sessions.ts).
  const result = await db.executeQuery<KeyHolder>(CompiledQuery.raw(API_KEY_HOLDER_SQL, [keyHash]));
  return result.rows[0];
}

const API_KEY_HOLDER_SQL = preparedStatement(
  'api_key_holder',
  `with holder as (
    select users.id, users.email, users.name, users.password_hash, users.role, users.is_active, users.email_verified,
           users.pending_email, users.created_at, users.updated_at, users.deleted_at,
           api_keys.id as api_key_id, api_keys.read_only as api_key_read_only,
           api_keys.expires_at <= now() as api_key_expired
    from api_keys join users on users.id = api_keys.user_id
    where api_keys.key_hash = $1 and users.deleted_at is null and users.is_active
  ), used as (
    update api_keys set last_used_at = now()
    from holder
    where api_keys.id = holder.api_key_id and not holder.api_key_expired
      and (api_keys.last_used_at is null or api_keys.last_used_at < now() - interval '1 minute')
  )
  select id, email, name, password_hash, role, is_active, email_verified, pending_email, created_at, updated_at, deleted_at,
         api_key_id, api_key_read_only, api_key_expired
  from holder`,
);
