import { CompiledQuery, sql, type ColumnType, type Generated, type Insertable, type Selectable } from 'kysely';
import { preparedStatement } from '../db/prepared.js';
import type { Executor, NullableTimestamp, Timestamp } from '../db/types.js';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

// Type aliases rather than interfaces: withTables wants types with an implicit index signature.
export type WebhookEndpointTable = {
  id: Generated<number>;
  url: string;
  /** Event types, or `*` for all. */
  events: string[];
  description: string | null;
  enabled: Generated<boolean>;
  secret_sealed: string;
  /** The secret before the last rotation, which still signs until `previous_secret_expires_at`. */
  previous_secret_sealed: ColumnType<string | null, string | null | undefined, string | null>;
  previous_secret_expires_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
};

export type WebhookMessageTable = {
  /** The webhook-id: the same across retries and endpoints. */
  id: string;
  event_type: string;
  /** The JSON body exactly as signed and sent. */
  body: string;
  created_at: Timestamp;
};

export type WebhookDeliveryTable = {
  id: Generated<number>;
  message_id: string;
  endpoint_id: number;
  status: ColumnType<DeliveryStatus, DeliveryStatus | undefined, DeliveryStatus>;
  attempts: Generated<number>;
  /** The attempt count when the current round of retries began. */
  round_start: Generated<number>;
  next_attempt_at: Timestamp;
  locked_until: NullableTimestamp;
  last_status_code: ColumnType<number | null, number | null | undefined, number | null>;
  last_error: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  delivered_at: NullableTimestamp;
  /** When it was delivered or given up: what the retention counts from. */
  finished_at: NullableTimestamp;
};

export type WebhookAttemptTable = {
  id: Generated<number>;
  delivery_id: number;
  attempted_at: Timestamp;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
};

type WebhookTables = {
  webhook_endpoints: WebhookEndpointTable;
  webhook_messages: WebhookMessageTable;
  webhook_deliveries: WebhookDeliveryTable;
  webhook_attempts: WebhookAttemptTable;
};

export type WebhookEndpointRow = Selectable<WebhookEndpointTable>;
export type NewWebhookEndpointRow = Insertable<WebhookEndpointTable>;
export type WebhookEndpointChanges = Partial<Pick<WebhookEndpointRow, 'url' | 'events' | 'description' | 'enabled'>>;
export type NewWebhookMessageRow = Insertable<WebhookMessageTable>;
export type WebhookAttemptRow = Selectable<WebhookAttemptTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveryTable> & { event_type: string };

/** A due delivery as the worker sends it: the message, and the endpoint's address and secrets. */
export interface ClaimedDelivery {
  id: number;
  message_id: string;
  attempts: number;
  round_start: number;
  body: string;
  url: string;
  secret_sealed: string;
  /** Set only while the previous secret still signs. */
  previous_secret_sealed: string | null;
}

/** The webhook tables' queries, typed; they sit beside the Database interface rather than in it. */
const hooks = (db: Executor) => db.withTables<WebhookTables>();

export function insertEndpoint(db: Executor, row: NewWebhookEndpointRow): Promise<WebhookEndpointRow> {
  return hooks(db).insertInto('webhook_endpoints').values(row).returningAll().executeTakeFirstOrThrow();
}

export function findEndpoint(db: Executor, id: number): Promise<WebhookEndpointRow | undefined> {
  return hooks(db).selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Up to `limit` endpoints with an id above `after`, by id ascending. */
export function listEndpointsAfter(db: Executor, after: number, limit: number): Promise<WebhookEndpointRow[]> {
  return hooks(db).selectFrom('webhook_endpoints').selectAll().where('id', '>', after).orderBy('id').limit(limit).execute();
}

export function updateEndpoint(db: Executor, id: number, changes: WebhookEndpointChanges): Promise<WebhookEndpointRow | undefined> {
  return hooks(db)
    .updateTable('webhook_endpoints')
    .set({ ...changes, updated_at: sql`now()` })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** Puts a new secret in place; the current one keeps signing for `overlapSeconds`. */
export function rotateEndpointSecret(
  db: Executor,
  id: number,
  secretSealed: string,
  overlapSeconds: number,
): Promise<WebhookEndpointRow | undefined> {
  return hooks(db)
    .updateTable('webhook_endpoints')
    .set((eb) => ({
      previous_secret_sealed: eb.ref('secret_sealed'),
      previous_secret_expires_at: sql`now() + make_interval(secs => ${overlapSeconds})`,
      secret_sealed: secretSealed,
      updated_at: sql`now()`,
    }))
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** Deletes an endpoint with its deliveries; false when there was none. */
export async function deleteEndpoint(db: Executor, id: number): Promise<boolean> {
  const deleted = await hooks(db).deleteFrom('webhook_endpoints').where('id', '=', id).returning('id').executeTakeFirst();
  return deleted !== undefined;
}

/**
 * The enabled endpoints subscribed to any of `eventTypes` (or to `*`), with the types each takes.
 * Every sign-in and account change asks, so it goes as a prepared statement.
 */
export async function findSubscribers(db: Executor, eventTypes: readonly string[]): Promise<{ id: number; events: string[] }[]> {
  const result = await db.executeQuery<{ id: number; events: string[] }>(CompiledQuery.raw(SUBSCRIBERS_SQL, [['*', ...eventTypes]]));
  return result.rows;
}

const SUBSCRIBERS_SQL = preparedStatement(
  'webhook_subscribers',
  'select id, events from webhook_endpoints where enabled and events && $1::text[] order by id',
);

/** Writes messages and their deliveries, in the caller's transaction. */
export async function insertMessages(
  db: Executor,
  messages: readonly NewWebhookMessageRow[],
  deliveries: readonly { message_id: string; endpoint_id: number }[],
): Promise<void> {
  if (messages.length === 0) return;
  await hooks(db).insertInto('webhook_messages').values(messages).execute();
  if (deliveries.length > 0) await hooks(db).insertInto('webhook_deliveries').values(deliveries).execute();
}

/**
 * Claims up to `limit` due deliveries to enabled endpoints, for `leaseMs`: rows another process
 * holds are skipped (SKIP LOCKED), and a claimed row is not claimed again until its lease runs out.
 * Each claim counts as an attempt.
 */
export async function claimDueDeliveries(db: Executor, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
  const { rows } = await sql<ClaimedDelivery>`
    with claimed as (
      update webhook_deliveries d
         set locked_until = now() + make_interval(secs => ${leaseMs / 1000}), attempts = d.attempts + 1
       where d.id in (
         select d2.id from webhook_deliveries d2
           join webhook_endpoints e2 on e2.id = d2.endpoint_id
          where d2.status = 'pending' and e2.enabled and d2.next_attempt_at <= now()
            and (d2.locked_until is null or d2.locked_until < now())
          order by d2.next_attempt_at, d2.id
          limit ${limit}
          for update of d2 skip locked)
      returning d.id, d.message_id, d.endpoint_id, d.attempts, d.round_start)
    select c.id, c.message_id, c.attempts, c.round_start, m.body, e.url, e.secret_sealed,
           case when e.previous_secret_expires_at > now() then e.previous_secret_sealed end as previous_secret_sealed
      from claimed c
      join webhook_messages m on m.id = c.message_id
      join webhook_endpoints e on e.id = c.endpoint_id
     order by c.id`.execute(db);
  return rows;
}

export interface AttemptOutcome {
  deliveryId: number;
  /** When the attempt began. */
  attemptedAt: Date;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** Delivered; otherwise retried after `retryInMs`, or given up when that is null. */
  delivered: boolean;
  retryInMs: number | null;
}

/** Records an attempt and what follows from it, unless the delivery is gone (its endpoint deleted meanwhile). */
export async function recordAttempt(db: Executor, outcome: AttemptOutcome): Promise<void> {
  const { deliveryId, attemptedAt, statusCode, error, durationMs, delivered, retryInMs } = outcome;
  const common = { locked_until: null, last_status_code: statusCode, last_error: error };
  const next = delivered
    ? { ...common, status: 'delivered' as const, delivered_at: sql<Date>`now()`, finished_at: sql<Date>`now()` }
    : retryInMs === null
      ? { ...common, status: 'failed' as const, finished_at: sql<Date>`now()` }
      : { ...common, next_attempt_at: sql<Date>`now() + make_interval(secs => ${retryInMs / 1000})` };
  // One statement, so that no reader sees the delivery's new state without the attempt that led to it.
  await hooks(db)
    .with('updated', (q) => q.updateTable('webhook_deliveries').set(next).where('id', '=', deliveryId).returning('id'))
    .insertInto('webhook_attempts')
    .columns(['delivery_id', 'attempted_at', 'status_code', 'error', 'duration_ms'])
    .expression((eb) =>
      eb
        .selectFrom('updated')
        .select((s) => [
          s.ref('updated.id').as('delivery_id'),
          sql<Date>`${attemptedAt}::timestamptz`.as('attempted_at'),
          sql<number | null>`${statusCode}::int`.as('status_code'),
          sql<string | null>`${error}::text`.as('error'),
          sql<number>`${durationMs}::int`.as('duration_ms'),
        ]),
    )
    .execute();
}

/** Gives back claimed deliveries that were not tried, so they are due again at once. */
export async function releaseDeliveries(db: Executor, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  await hooks(db)
    .updateTable('webhook_deliveries')
    .set((eb) => ({ locked_until: null, attempts: eb('attempts', '-', 1) }))
    .where('id', 'in', ids)
    .where('status', '=', 'pending')
    .execute();
}

/** Up to `limit` deliveries of an endpoint with an id above `after`, by id ascending. */
export function listDeliveriesAfter(
  db: Executor,
  endpointId: number,
  filter: { status?: DeliveryStatus },
  after: number,
  limit: number,
): Promise<WebhookDeliveryRow[]> {
  let q = hooks(db)
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_messages as m', 'm.id', 'd.message_id')
    .selectAll('d')
    .select('m.event_type')
    .where('d.endpoint_id', '=', endpointId)
    .where('d.id', '>', after);
  if (filter.status !== undefined) q = q.where('d.status', '=', filter.status);
  return q.orderBy('d.id').limit(limit).execute();
}

/** The attempts of these deliveries, oldest first. */
export function listAttempts(db: Executor, deliveryIds: readonly number[]): Promise<WebhookAttemptRow[]> {
  if (deliveryIds.length === 0) return Promise.resolve([]);
  return hooks(db).selectFrom('webhook_attempts').selectAll().where('delivery_id', 'in', deliveryIds).orderBy('id').execute();
}

/**
 * Makes a delivery of the endpoint due now. A finished one starts a new round of retries; its
 * attempts keep counting. Undefined when the endpoint has no such delivery.
 */
export function retryDelivery(db: Executor, endpointId: number, id: number): Promise<WebhookDeliveryRow | undefined> {
  return hooks(db)
    .updateTable('webhook_deliveries as d')
    .from('webhook_messages as m')
    .set((eb) => ({
      status: 'pending',
      next_attempt_at: sql<Date>`now()`,
      round_start: eb.case().when('d.status', '=', 'pending').then(eb.ref('d.round_start')).else(eb.ref('d.attempts')).end(),
      finished_at: null,
    }))
    .whereRef('m.id', '=', 'd.message_id')
    .where('d.id', '=', id)
    .where('d.endpoint_id', '=', endpointId)
    .returningAll('d')
    .returning('m.event_type')
    .executeTakeFirst();
}

/**
 * Deletes up to `limit` deliveries finished before `before`, skipping rows another process is
 * deleting, and up to `limit` messages of that age left without deliveries (pruned before or by this
 * statement, or gone with their endpoint), in one statement; returns how many rows went.
 */
export async function pruneFinishedDeliveries(db: Executor, before: Date, limit: number): Promise<number> {
  const { rows } = await sql<{ deliveries: number; messages: number }>`
    with pruned as (
      delete from webhook_deliveries
      where id in (
        select id from webhook_deliveries
        where finished_at < ${before}
        order by finished_at
        limit ${limit}::int
        for update skip locked
      )
      returning id
    ),
    orphaned as (
      delete from webhook_messages
      where id in (
        select m.id from webhook_messages m
        where m.created_at < ${before}
          and not exists (
            select 1 from webhook_deliveries d where d.message_id = m.id and d.id not in (select id from pruned)
          )
        limit ${limit}::int
      )
      returning 1
    )
    select (select count(*)::int from pruned) as deliveries, (select count(*)::int from orphaned) as messages`.execute(db);
  return rows[0].deliveries + rows[0].messages;
}
