import { sql, type ColumnType, type Generated, type Selectable } from 'kysely';
import type { Executor, NullableTimestamp, Timestamp } from '../db/types.js';

export type LogoutDeliveryStatus = 'pending' | 'delivered' | 'failed';

// A type alias rather than an interface: withTables wants types with an implicit index signature.
export type LogoutDeliveryTable = {
  id: Generated<number>;
  client_id: string;
  /** The `sid` the client's ID tokens of the ended provider session carried. */
  sid: string;
  /** The provider's accountId of the person: the token's `sub` (made pairwise for a client that asks). */
  account_id: string;
  jti: Generated<string>;
  status: ColumnType<LogoutDeliveryStatus, LogoutDeliveryStatus | undefined, LogoutDeliveryStatus>;
  attempts: Generated<number>;
  next_attempt_at: Timestamp;
  locked_until: NullableTimestamp;
  last_status_code: ColumnType<number | null, number | null | undefined, number | null>;
  last_error: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  delivered_at: NullableTimestamp;
  finished_at: NullableTimestamp;
};

type LogoutTables = { oidc_logout_deliveries: LogoutDeliveryTable };

export type LogoutDeliveryRow = Selectable<LogoutDeliveryTable>;

/** A due logout as the worker sends it. */
export type ClaimedLogout = Pick<LogoutDeliveryRow, 'id' | 'client_id' | 'sid' | 'account_id' | 'jti' | 'attempts'>;

/** One client's part of a provider session: what a logout token is owed for. */
export interface SessionLogout {
  clientId: string;
  sid: string;
  accountId: string;
}

const logouts = (db: Executor) => db.withTables<LogoutTables>();

/** Which ended provider sessions to queue logouts for: a person's, those a service session opened, or one grant's part of them. */
export type EndedSessions = { userId: number } | { serviceSessionId: string } | { userId: number; clientId: string; grantId: string };

/**
 * Queues a logout for each client with a `backchannel_logout_uri` in each live provider session of
 * `ended`, in the caller's transaction (the database's `oidc_queue_session_logouts`, which the triggers
 * that end provider sessions with a service session or a person call too); a client and `sid` already
 * queued are not queued again. Returns the ids of every logout queued in this transaction so far,
 * the triggers' included (`created_at` is the transaction's `now()`).
 */
export async function queueSessionLogouts(db: Executor, ended: EndedSessions): Promise<string[]> {
  const serviceSession = 'serviceSessionId' in ended ? ended.serviceSessionId : null;
  const userId = 'userId' in ended ? ended.userId : null;
  const [clientId, grantId] = 'grantId' in ended ? [ended.clientId, ended.grantId] : [null, null];
  await sql`select oidc_queue_session_logouts(${serviceSession}::uuid, ${userId}::int, ${clientId}::text, ${grantId}::text)`.execute(db);
  const rows = await logouts(db)
    .selectFrom('oidc_logout_deliveries')
    .select('id')
    .where('created_at', '=', sql<Date>`now()`)
    .where('status', '=', 'pending')
    .execute();
  return rows.map((row) => String(row.id));
}

/** Queues one logout, unless that client and `sid` already have one; its id, or undefined. */
export async function queueLogout(db: Executor, logout: SessionLogout): Promise<string | undefined> {
  const row = await logouts(db)
    .insertInto('oidc_logout_deliveries')
    .values({ client_id: logout.clientId, sid: logout.sid, account_id: logout.accountId })
    .onConflict((oc) => oc.columns(['client_id', 'sid']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return row && String(row.id);
}

/**
 * A grant revoked ends its client's part of the person's provider sessions: the client is taken out
 * of them, as the provider does when a client alone is logged out, so that signing in to it again
 * starts afresh (and a later logout of the session owes it nothing more).
 */
export async function removeClientFromSessions(db: Executor, userId: number, clientId: string, grantId: string): Promise<void> {
  await sql`
    update oidc_records set payload = payload #- array['authorizations', ${clientId}]::text[]
     where model = 'Session' and user_id = ${userId}
       and payload -> 'authorizations' -> ${clientId} ->> 'grantId' = ${grantId}`.execute(db);
}

/**
 * Claims up to `limit` due logouts for `leaseMs` (SKIP LOCKED: rows another process holds are
 * skipped, and a claimed row is not claimed again until its lease runs out); each claim counts as an attempt.
 */
export async function claimDueLogouts(db: Executor, limit: number, leaseMs: number): Promise<ClaimedLogout[]> {
  const { rows } = await sql<ClaimedLogout>`
    update oidc_logout_deliveries d
       set locked_until = now() + make_interval(secs => ${leaseMs / 1000}), attempts = d.attempts + 1
     where d.id in (
       select id from oidc_logout_deliveries
        where status = 'pending' and next_attempt_at <= now() and (locked_until is null or locked_until < now())
        order by next_attempt_at, id
        limit ${limit}
        for update skip locked)
    returning d.id, d.client_id, d.sid, d.account_id, d.jti, d.attempts`.execute(db);
  return rows;
}

export interface LogoutOutcome {
  id: number;
  statusCode: number | null;
  error: string | null;
  /** Delivered; otherwise retried after `retryInMs`, or given up when that is null. */
  delivered: boolean;
  retryInMs: number | null;
}

export async function recordLogoutAttempt(db: Executor, outcome: LogoutOutcome): Promise<void> {
  const { id, statusCode, error, delivered, retryInMs } = outcome;
  const common = { locked_until: null, last_status_code: statusCode, last_error: error };
  const next = delivered
    ? { ...common, status: 'delivered' as const, delivered_at: sql<Date>`now()`, finished_at: sql<Date>`now()` }
    : retryInMs === null
      ? { ...common, status: 'failed' as const, finished_at: sql<Date>`now()` }
      : { ...common, next_attempt_at: sql<Date>`now() + make_interval(secs => ${retryInMs / 1000})` };
  await logouts(db).updateTable('oidc_logout_deliveries').set(next).where('id', '=', id).execute();
}

/** Gives back claimed logouts that were not tried, so they are due again at once. */
export async function releaseLogouts(db: Executor, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  await logouts(db)
    .updateTable('oidc_logout_deliveries')
    .set((eb) => ({ locked_until: null, attempts: eb('attempts', '-', 1) }))
    .where('id', 'in', ids)
    .where('status', '=', 'pending')
    .execute();
}

/** Deletes up to `limit` logouts delivered or given up before `before`; returns how many went. */
export async function pruneFinishedLogouts(db: Executor, before: Date, limit: number): Promise<number> {
  const result = await logouts(db)
    .deleteFrom('oidc_logout_deliveries')
    .where('id', 'in', (eb) =>
      eb.selectFrom('oidc_logout_deliveries').select('id').where('finished_at', '<', before).orderBy('finished_at').limit(limit),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
