import { CompiledQuery, sql, type ColumnType, type Selectable } from 'kysely';
import { preparedStatement } from '../db/prepared.js';
import type { Executor, NullableTimestamp, Timestamp, UserRow } from '../db/types.js';

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
  // The provider saves a record for nearly every request (each token it issues): the statement is
  // written once rather than built per call, and PostgreSQL prepares it once per connection.
  const values = [
    record.model,
    record.id,
    JSON.stringify(record.payload),
    record.grantId,
    record.uid,
    record.sessionUid,
    record.userCode,
    record.userId,
    record.clientId,
    record.expiresAt,
  ];
  await db.executeQuery(
    record.serviceSessionId === undefined
      ? CompiledQuery.raw(UPSERT_RECORD_SQL, values)
      : CompiledQuery.raw(UPSERT_RECORD_WITH_SERVICE_SESSION_SQL, [...values, record.serviceSessionId]),
  );
}

const RECORD_COLUMNS = 'model, id, payload, grant_id, uid, session_uid, user_code, user_id, client_id, expires_at';
const RECORD_UPDATES = `payload = excluded.payload, grant_id = excluded.grant_id, uid = excluded.uid,
    session_uid = excluded.session_uid, user_code = excluded.user_code, user_id = excluded.user_id,
    client_id = excluded.client_id, expires_at = excluded.expires_at`;
const UPSERT_RECORD_SQL = preparedStatement(
  'oidc_record_upsert',
  `insert into oidc_records (${RECORD_COLUMNS}) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
  on conflict (model, id) do update set ${RECORD_UPDATES}`,
);
const UPSERT_RECORD_WITH_SERVICE_SESSION_SQL = preparedStatement(
  'oidc_record_upsert_with_service_session',
  `insert into oidc_records (${RECORD_COLUMNS}, service_session_id) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
  on conflict (model, id) do update set ${RECORD_UPDATES}, service_session_id = excluded.service_session_id`,
);

/**
 * Saves `records` (tokens; none with a service session) and marks `consumed` used, in one statement
 * and one transaction, as the token endpoint does at the end of a refresh or a code's exchange. The
 * record to consume must not have been used already: when another request used it first (the same
 * refresh token presented twice at once), nothing is saved and false is returned.
 */
export async function saveTokenRecords(
  db: Executor,
  consumed: { model: string; id: string } | undefined,
  records: readonly OidcRecord[],
): Promise<boolean> {
  const column = <T>(pick: (record: OidcRecord) => T) => records.map(pick);
  const { rows } = await db.executeQuery<{ consumed: number }>(
    CompiledQuery.raw(SAVE_TOKEN_RECORDS_SQL, [
      consumed?.model ?? null,
      consumed?.id ?? null,
      column((record) => record.model),
      column((record) => record.id),
      column((record) => JSON.stringify(record.payload)),
      column((record) => record.grantId),
      column((record) => record.uid),
      column((record) => record.sessionUid),
      column((record) => record.userCode),
      column((record) => record.userId),
      column((record) => record.clientId),
      column((record) => record.expiresAt),
    ]),
  );
  return consumed === undefined || rows[0].consumed === 1;
}

const SAVE_TOKEN_RECORDS_SQL = preparedStatement(
  'oidc_token_records_save',
  `with consumed as (
    update oidc_records set consumed_at = now()
    where model = $1::text and id = $2::text and consumed_at is null
    returning 1
  ), saved as (
    insert into oidc_records (${RECORD_COLUMNS})
    select * from unnest($3::text[], $4::text[], $5::jsonb[], $6::text[], $7::text[], $8::text[], $9::text[], $10::int[],
      $11::text[], $12::timestamptz[])
    where $1::text is null or exists (select 1 from consumed)
    on conflict (model, id) do update set ${RECORD_UPDATES}
    returning 1
  )
  select (select count(*) from consumed)::int as consumed, (select count(*) from saved)::int as saved`,
);

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
/**
 * When a provider session's record `r`, with its service session `s` (left joined), is live: the
 * record unexpired, and the service session behind it neither revoked nor expired when it has a person.
 * Written once for the two reads that apply it.
 */
const LIVE_PROVIDER_SESSION = `(r.expires_at is null or r.expires_at > now())
      and (r.user_id is null or (s.revoked_at is null and s.expires_at > now()))`;

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
    .where(sql<boolean>`${sql.raw(LIVE_PROVIDER_SESSION)}`)
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

/**
 * A token's record as found with what the provider asks for next: its grant, the provider session it
 * is bound to (while live, as `findLiveProviderSession` reads it), and its person. Each is null when the token
 * has none or it is gone.
 */
export interface TokenRecordWithRelated {
  model: string;
  payload: Record<string, unknown>;
  consumed_at: Date | null;
  grant_id: string | null;
  grant_payload: Record<string, unknown> | null;
  grant_consumed_at: Date | null;
  session_uid: string | null;
  session_payload: Record<string, unknown> | null;
  session_consumed_at: Date | null;
  user_id: number | null;
  /** The person's row as `findUserById` gives it, when the token names one who exists. */
  user: UserRow | null;
}

/** The models that are tokens a client presents, each found with what the provider reads next. */
export const TOKEN_MODELS: readonly string[] = ['AccessToken', 'ClientCredentials', 'RefreshToken'];

/**
 * The unexpired record of `model` with this id, or with `'any token'` those of every model of
 * TOKEN_MODELS (a token presented without saying which kind it is), each with its grant, its provider
 * session and its person, in one read: for nearly every use of a token the provider then reads those
 * three, one round trip each.
 */
export async function findTokenRecordsWithRelated(db: Executor, model: string, id: string): Promise<TokenRecordWithRelated[]> {
  // Every request about a token runs this: its SQL is written once rather than built per call, and
  // PostgreSQL prepares it once per connection.
  const { rows } = await db.executeQuery<TokenRow>(
    model === ANY_TOKEN ? CompiledQuery.raw(ANY_TOKEN_WITH_RELATED_SQL, [id]) : CompiledQuery.raw(TOKEN_WITH_RELATED_SQL, [model, id]),
  );
  return rows.map(
    ({
      u_id,
      u_email,
      u_name,
      u_password_hash,
      u_role,
      u_is_active,
      u_email_verified,
      u_pending_email,
      u_created_at,
      u_updated_at,
      u_deleted_at,
      ...row
    }) => ({
      ...row,
      user:
        u_id === null
          ? null
          : {
              id: u_id,
              email: u_email!,
              name: u_name!,
              password_hash: u_password_hash!,
              role: u_role!,
              is_active: u_is_active!,
              email_verified: u_email_verified!,
              pending_email: u_pending_email,
              created_at: u_created_at!,
              updated_at: u_updated_at!,
              deleted_at: u_deleted_at,
            },
    }),
  );
}

type Nullable<T> = { [K in keyof T as `u_${string & K}`]: T[K] | null };
type TokenRow = Omit<TokenRecordWithRelated, 'user'> & Nullable<UserRow>;

/** What `findTokenRecordsWithRelated` is given for a token of any kind. */
export const ANY_TOKEN = 'any token';

/**
 * The read of a token with its related records, the token's model given by `modelIs` and its id by the
 * last parameter. The model is compared with a parameter or with constants, never with an array
 * parameter (`= any($1)`): PostgreSQL cannot tell how many models such an array holds, so its generic
 * plan for the statement looks dearer than a plan made for each call's values, and it would plan the
 * statement again on every call (about 0.4 ms, eight times its execution).
 */
const tokenWithRelatedSql = (
  modelIs: string,
  idParameter: string,
) => `select t.model, t.payload, t.consumed_at, t.grant_id, g.payload as grant_payload, g.consumed_at as grant_consumed_at,
    t.session_uid, ps.payload as session_payload, ps.consumed_at as session_consumed_at, t.user_id,
    u.id as u_id, u.email as u_email, u.name as u_name, u.password_hash as u_password_hash, u.role as u_role,
    u.is_active as u_is_active, u.email_verified as u_email_verified, u.pending_email as u_pending_email,
    u.created_at as u_created_at, u.updated_at as u_updated_at, u.deleted_at as u_deleted_at
  from oidc_records t
  left join oidc_records g on g.model = 'Grant' and g.id = t.grant_id and (g.expires_at is null or g.expires_at > now())
  left join lateral (
    select r.payload, r.consumed_at from oidc_records r left join sessions s on s.id = r.service_session_id
    where r.model = 'Session' and r.uid = t.session_uid and ${LIVE_PROVIDER_SESSION}
    limit 1
  ) ps on true
  left join users u on u.id = t.user_id
  where t.model ${modelIs} and t.id = ${idParameter} and (t.expires_at is null or t.expires_at > now())`;
const TOKEN_WITH_RELATED_SQL = preparedStatement('oidc_token_with_related', tokenWithRelatedSql('= $1', '$2'));
const ANY_TOKEN_WITH_RELATED_SQL = preparedStatement(
  'oidc_any_token_with_related',
  tokenWithRelatedSql(`in (${TOKEN_MODELS.map((model) => `'${model}'`).join(', ')})`, '$1'),
);

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

/** Marks a record used (a code exchanged, a refresh token rotated): once per such request, so prepared. */
export async function consumeOidcRecord(db: Executor, model: string, id: string): Promise<void> {
  await db.executeQuery(CompiledQuery.raw(CONSUME_RECORD_SQL, [model, id]));
}

const CONSUME_RECORD_SQL = preparedStatement(
  'oidc_record_consume',
  'update oidc_records set consumed_at = now() where model = $1 and id = $2',
);

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
