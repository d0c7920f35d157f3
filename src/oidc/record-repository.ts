import { sql, type ColumnType, type Selectable } from 'kysely';
import type { Executor, NullableTimestamp, Timestamp } from '../db/types.js';

// Type aliases rather than interfaces: withTables wants types with an implicit index signature.
export type OidcRecordTable = {
  /** The provider's model: Session, Interaction, Grant, AuthorizationCode, AccessToken, RefreshToken, ... */
  model: string;
  id: string;
  payload: ColumnType<Record<string, unknown>, string, string>;
  grant_id: string | null;
  uid: string | null;
  session_uid: string | null;
  user_code: string | null;
  user_id: number | null;
  service_session_id: ColumnType<string | null, string | null | undefined, string | null>;
  client_id: string | null;
  expires_at: ColumnType<Date | null, Date | null, Date | null>;
  consumed_at: NullableTimestamp;
  created_at: Timestamp;
};

type RecordTables = { oidc_records: OidcRecordTable; oauth_clients: { client_id: string; name: string } };

export type OidcRecordRow = Selectable<OidcRecordTable>;

const records = (db: Executor) => db.withTables<RecordTables>();

/** A record as the provider saves it, with the columns it is found and removed by. */
export interface OidcRecord {
  model: string;
  id: string;
  payload: Record<string, unknown>;
  grantId: string | null;
  uid: string | null;
  sessionUid: string | null;
  userCode: string | null;
  userId: number | null;
  clientId: string | null;
  /** Set for a provider session the hosted sign-in opened; left as it was when undefined. */
  serviceSessionId: string | undefined;
  expiresAt: Date | null;
}

/** Saves a record, replacing the one of the same model and id. */
export async function upsertOidcRecord(db: Executor, record: OidcRecord): Promise<void> {
  const values = {
    model: record.model,
    id: record.id,
    payload: JSON.stringify(record.payload),
    grant_id: record.grantId,
    uid: record.uid,
    session_uid: record.sessionUid,
    user_code: record.userCode,
    user_id: record.userId,
    client_id: record.clientId,
    expires_at: record.expiresAt,
    ...(record.serviceSessionId === undefined ? {} : { service_session_id: record.serviceSessionId }),
  };
  await records(db)
    .insertInto('oidc_records')
    .values(values)
    .onConflict((oc) =>
      oc.columns(['model', 'id']).doUpdateSet({
        payload: (eb) => eb.ref('excluded.payload'),
        grant_id: (eb) => eb.ref('excluded.grant_id'),
        uid: (eb) => eb.ref('excluded.uid'),
        session_uid: (eb) => eb.ref('excluded.session_uid'),
        user_code: (eb) => eb.ref('excluded.user_code'),
        user_id: (eb) => eb.ref('excluded.user_id'),
        client_id: (eb) => eb.ref('excluded.client_id'),
        expires_at: (eb) => eb.ref('excluded.expires_at'),
        ...(record.serviceSessionId === undefined ? {} : { service_session_id: (eb) => eb.ref('excluded.service_session_id') }),
      }),
    )
    .execute();
}

/** The service session a provider session with this uid was opened by, if any. */
export async function findServiceSessionOfProviderSession(db: Executor, uid: string): Promise<string | undefined> {
  const row = await records(db)
    .selectFrom('oidc_records')
    .select('service_session_id')
    .where('model', '=', 'Session')
    .where('uid', '=', uid)
    .executeTakeFirst();
  return row?.service_session_id ?? undefined;
}

/** The service session a provider session (by its record id) was opened by, if any. */
export async function findServiceSessionOfRecord(db: Executor, id: string): Promise<string | undefined> {
  const row = await records(db)
    .selectFrom('oidc_records')
    .select('service_session_id')
    .where('model', '=', 'Session')
    .where('id', '=', id)
    .executeTakeFirst();
  return row?.service_session_id ?? undefined;
}

/**
 * A provider session's record, found by its id or uid, while the service session the hosted sign-in
 * opened for it is live: a provider session outlives neither the revocation nor the expiry of the
 * session the person sees in their list (nor its removal by housekeeping). A record without a person
 * (a browser that has not signed in) needs none.
 */
export function findLiveProviderSession(
  db: Executor,
  by: { id: string } | { uid: string },
): Promise<Pick<OidcRecordRow, 'payload' | 'consumed_at'> | undefined> {
  return records(db)
    .selectFrom('oidc_records as r')
    .leftJoin('sessions as s', 's.id', 'r.service_session_id')
    .select(['r.payload', 'r.consumed_at'])
    .where('r.model', '=', 'Session')
    .where('id' in by ? 'r.id' : 'r.uid', '=', 'id' in by ? by.id : by.uid)
    .where((eb) => eb.or([eb('r.expires_at', 'is', null), eb('r.expires_at', '>', sql<Date>`now()`)]))
    .where((eb) =>
      eb.or([eb('r.user_id', 'is', null), eb.and([eb('s.revoked_at', 'is', null), eb('s.expires_at', '>', sql<Date>`now()`)])]),
    )
    .executeTakeFirst();
}

/**
 * The service session a provider session backs lives as long as the provider session: its expiry
 * becomes the provider session's, never past its own absolute limit (`maxDays` from its opening). A
 * revoked or already expired one stays as it is.
 */
export async function followProviderSession(db: Executor, recordId: string, expiresAt: Date, maxDays: number): Promise<void> {
  await sql`
    update sessions set expires_at = least(${expiresAt}::timestamptz, created_at + make_interval(days => ${maxDays}::int))
    where id = (select service_session_id from oidc_records where model = 'Session' and id = ${recordId})
      and revoked_at is null and expires_at > now()`.execute(db);
}

/**
 * Ends everything the provider issued a person, found by the person rather than by the service
 * session it came through: provider sessions, sign-ins under way, authorization codes, access and
 * refresh tokens, and the grants (an application must be allowed again after a new sign-in).
 */
export async function endUserOidcRecords(db: Executor, userId: number): Promise<void> {
  await records(db).deleteFrom('oidc_records').where('user_id', '=', userId).execute();
}

const live = (db: Executor) =>
  records(db)
    .selectFrom('oidc_records')
    .select(['payload', 'consumed_at'])
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`now()`)]));

/** An unexpired record's payload and when it was consumed. */
export function findOidcRecord(
  db: Executor,
  model: string,
  id: string,
): Promise<Pick<OidcRecordRow, 'payload' | 'consumed_at'> | undefined> {
  return live(db).where('model', '=', model).where('id', '=', id).executeTakeFirst();
}

/** A token's record as found with its grant's: each unexpired, the grant's fields null when it has none or it is gone. */
export interface TokenRecordWithGrant {
  model: string;
  payload: Record<string, unknown>;
  consumed_at: Date | null;
  grant_id: string | null;
  grant_payload: Record<string, unknown> | null;
  grant_consumed_at: Date | null;
}

/**
 * The unexpired records of any of `models` with this id, each with its unexpired grant, in one read:
 * the provider reads a token and then, for nearly every use of it, the grant it belongs to.
 */
export function findTokenRecordsWithGrant(db: Executor, models: readonly string[], id: string): Promise<TokenRecordWithGrant[]> {
  return records(db)
    .selectFrom('oidc_records as t')
    .leftJoin('oidc_records as g', (join) =>
      join
        .on('g.model', '=', 'Grant')
        .onRef('g.id', '=', 't.grant_id')
        .on((eb) => eb.or([eb('g.expires_at', 'is', null), eb('g.expires_at', '>', sql<Date>`now()`)])),
    )
    .select(['t.model', 't.payload', 't.consumed_at', 't.grant_id', 'g.payload as grant_payload', 'g.consumed_at as grant_consumed_at'])
    .where('t.model', 'in', models)
    .where('t.id', '=', id)
    .where((eb) => eb.or([eb('t.expires_at', 'is', null), eb('t.expires_at', '>', sql<Date>`now()`)]))
    .execute();
}

export function findOidcRecordByUid(
  db: Executor,
  model: string,
  uid: string,
): Promise<Pick<OidcRecordRow, 'payload' | 'consumed_at'> | undefined> {
  return live(db).where('model', '=', model).where('uid', '=', uid).executeTakeFirst();
}

export function findOidcRecordByUserCode(
  db: Executor,
  model: string,
  userCode: string,
): Promise<Pick<OidcRecordRow, 'payload' | 'consumed_at'> | undefined> {
  return live(db).where('model', '=', model).where('user_code', '=', userCode).executeTakeFirst();
}

export async function consumeOidcRecord(db: Executor, model: string, id: string): Promise<void> {
  await records(db)
    .updateTable('oidc_records')
    .set({ consumed_at: sql`now()` })
    .where('model', '=', model)
    .where('id', '=', id)
    .execute();
}

export async function deleteOidcRecord(db: Executor, model: string, id: string): Promise<void> {
  await records(db).deleteFrom('oidc_records').where('model', '=', model).where('id', '=', id).execute();
}

/** Removes the records of one model (codes, or access tokens, or refresh tokens) issued under a grant. */
export async function deleteOidcRecordsOfGrant(db: Executor, model: string, grantId: string): Promise<void> {
  await records(db).deleteFrom('oidc_records').where('model', '=', model).where('grant_id', '=', grantId).execute();
}

/** What a person allowed an application: a grant with its client's name. */
export interface UserGrantRow {
  id: string;
  client_id: string;
  client_name: string | null;
  payload: Record<string, unknown>;
  created_at: Date;
}

/** The live grants of a user, newest first. */
export function listUserGrants(db: Executor, userId: number): Promise<UserGrantRow[]> {
  return records(db)
    .selectFrom('oidc_records as r')
    .leftJoin('oauth_clients as c', 'c.client_id', 'r.client_id')
    .select(['r.id', sql<string>`r.client_id`.as('client_id'), 'c.name as client_name', 'r.payload', 'r.created_at'])
    .where('r.model', '=', 'Grant')
    .where('r.user_id', '=', userId)
    .where((eb) => eb.or([eb('r.expires_at', 'is', null), eb('r.expires_at', '>', sql<Date>`now()`)]))
    .orderBy('r.created_at', 'desc')
    .orderBy('r.id')
    .execute();
}

/** Removes a user's grant and everything issued under it; its client, or undefined when the user has no such grant. */
export async function deleteUserGrant(db: Executor, userId: number, grantId: string): Promise<string | undefined> {
  const grant = await records(db)
    .deleteFrom('oidc_records')
    .where('model', '=', 'Grant')
    .where('id', '=', grantId)
    .where('user_id', '=', userId)
    .returning('client_id')
    .executeTakeFirst();
  if (!grant) return undefined;
  await records(db).deleteFrom('oidc_records').where('grant_id', '=', grantId).execute();
  return grant.client_id ?? '';
}

/** Removes every record of a client: its grants, codes, tokens and registration access token. */
export async function deleteClientRecords(db: Executor, clientId: string): Promise<void> {
  await records(db).deleteFrom('oidc_records').where('client_id', '=', clientId).execute();
}

/**
 * Removes everything the OpenID Connect provider issued to a user (their provider sessions, grants,
 * codes and tokens); sign-ins under way (interactions) stay. Returns how many records went.
 */
export async function deleteUserOidcRecords(db: Executor, userId: number): Promise<number> {
  const result = await records(db)
    .deleteFrom('oidc_records')
    .where('user_id', '=', userId)
    .where('model', '!=', 'Interaction')
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
