import { sql } from 'kysely';
import type { AuditEventTable } from '../audit/audit-repository.js';
import type { Executor } from '../db/types.js';
import type { WebhookDeliveryTable } from '../webhooks/webhook-repository.js';

/** The tables the overview counts in, beside the Database interface as their own repositories keep them. */
type CountedTables = { audit_events: AuditEventTable; webhook_deliveries: WebhookDeliveryTable };

const counted = (db: Executor) => db.withTables<CountedTables>();

export interface UserCounts {
  active: number;
  inactive: number;
  deleted: number;
}

/** Users per state, from the counters a trigger keeps on users: a read of three rows at any table size. */
export async function countUsersByState(db: Executor): Promise<UserCounts> {
  const rows = await db
    .selectFrom('user_counts')
    .select(['state', sql<number>`n::int`.as('n')])
    .execute();
  const counts: UserCounts = { active: 0, inactive: 0, deleted: 0 };
  for (const row of rows) counts[row.state] += Number(row.n);
  return counts;
}

/** How many events of each of `types` occurred at or after `since` (the trail's time index finds them). */
export async function countEventsSince(db: Executor, types: readonly string[], since: Date): Promise<Map<string, number>> {
  const rows = await counted(db)
    .selectFrom('audit_events')
    .select(['event_type', sql<number>`count(*)::int`.as('n')])
    .where('occurred_at', '>=', since)
    .where('event_type', 'in', types)
    .groupBy('event_type')
    .execute();
  return new Map(rows.map((row) => [row.event_type, Number(row.n)]));
}

export interface BacklogCounts {
  pending: number;
  failed: number;
  oldest_pending_at: Date | null;
}

/** Mail waiting to be sent or retried, and mail given up since `since`. */
export async function mailBacklog(db: Executor, since: Date): Promise<BacklogCounts> {
  const row = await db
    .selectFrom('mail_outbox')
    .select([
      sql<number>`count(*) filter (where sent_at is null and failed_at is null)::int`.as('pending'),
      sql<number>`count(*) filter (where failed_at >= ${since})::int`.as('failed'),
      sql<Date | null>`min(created_at) filter (where sent_at is null and failed_at is null)`.as('oldest_pending_at'),
    ])
    .where((eb) => eb.or([eb.and([eb('sent_at', 'is', null), eb('failed_at', 'is', null)]), eb('failed_at', '>=', since)]))
    .executeTakeFirstOrThrow();
  return backlogOf(row);
}

/** Webhook deliveries waiting to be sent or retried, and deliveries given up since `since`. */
export async function webhookBacklog(db: Executor, since: Date): Promise<BacklogCounts> {
  const row = await counted(db)
    .selectFrom('webhook_deliveries')
    .select([
      sql<number>`count(*) filter (where status = 'pending')::int`.as('pending'),
      sql<number>`count(*) filter (where status = 'failed')::int`.as('failed'),
      sql<Date | null>`min(created_at) filter (where status = 'pending')`.as('oldest_pending_at'),
    ])
    .where((eb) => eb.or([eb('status', '=', 'pending'), eb.and([eb('status', '=', 'failed'), eb('finished_at', '>=', since)])]))
    .executeTakeFirstOrThrow();
  return backlogOf(row);
}

function backlogOf(row: { pending: number; failed: number; oldest_pending_at: Date | string | null }): BacklogCounts {
  const oldest = row.oldest_pending_at;
  return {
    pending: Number(row.pending),
    failed: Number(row.failed),
    oldest_pending_at: oldest === null ? null : new Date(oldest),
  };
}
