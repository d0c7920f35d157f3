import { sql } from 'kysely';
import type { Executor, NewOutboxRow, OutboxRow } from './types';

export async function enqueueMail(db: Executor, row: NewOutboxRow): Promise<void> {
  await db.insertInto('mail_outbox').values(row).execute();
}

/**
 * Claims up to `limit` messages that are due, for `leaseMs`: rows another process holds are
 * skipped (SKIP LOCKED), and a claimed row is not claimed again until its lease runs out.
 */
export function claimDueMail(db: Executor, limit: number, leaseMs: number): Promise<OutboxRow[]> {
  return db
    .updateTable('mail_outbox')
    .set({
      locked_until: sql`now() + make_interval(secs => ${leaseMs / 1000})`,
      attempts: sql`attempts + 1`,
    })
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('mail_outbox')
        .select('id')
        .where('sent_at', 'is', null)
        .where('failed_at', 'is', null)
        .where('next_attempt_at', '<=', sql<Date>`now()`)
        .where((w) => w.or([w('locked_until', 'is', null), w('locked_until', '<', sql<Date>`now()`)]))
        .orderBy('next_attempt_at')
        .orderBy('id')
        .limit(limit)
        .forUpdate()
        .skipLocked(),
    )
    .returningAll()
    .execute();
}

/** Records a delivery and erases the message, which carried a token. */
export async function markMailSent(db: Executor, id: number): Promise<void> {
  await db
    .updateTable('mail_outbox')
    .set({ sent_at: sql`now()`, payload: null, locked_until: null, last_error: null })
    .where('id', '=', id)
    .execute();
}

/** Schedules another attempt, or gives up for good when `retryInMs` is null. */
export async function markMailFailed(db: Executor, id: number, error: string, retryInMs: number | null): Promise<void> {
  await db
    .updateTable('mail_outbox')
    .set(
      retryInMs === null
        ? { failed_at: sql`now()`, payload: null, locked_until: null, last_error: error }
        : { next_attempt_at: sql`now() + make_interval(secs => ${retryInMs / 1000})`, locked_until: null, last_error: error },
    )
    .where('id', '=', id)
    .execute();
}

/** Gives back claimed messages that were not tried, so they are due again at once. */
export async function releaseMail(db: Executor, ids: number[]): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable('mail_outbox')
    .set({ locked_until: null, attempts: sql`attempts - 1` })
    .where('id', 'in', ids)
    .where('sent_at', 'is', null)
    .execute();
}

/** Messages neither sent nor given up: the queue's backlog. */
export async function countPendingMail(db: Executor): Promise<number> {
  const row = await db
    .selectFrom('mail_outbox')
    .select(sql<number>`count(*)::int`.as('pending'))
    .where('sent_at', 'is', null)
    .where('failed_at', 'is', null)
    .executeTakeFirstOrThrow();
  return row.pending;
}
