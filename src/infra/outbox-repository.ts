import { sql, type ExpressionBuilder } from 'kysely';
import type { Database, Executor, NewOutboxRow, OutboxRow } from '../db/types.js';

export async function enqueueMail(db: Executor, row: NewOutboxRow): Promise<void> {
  await db.insertInto('mail_outbox').values(row).execute();
}

/**
 * Claims the next due message for `leaseMs`: rows another process holds are skipped (SKIP LOCKED),
 * and a claimed row is not claimed again until its lease runs out. The claim counts as an attempt,
 * and the attempt count it returns is the claim's fence: the row stays ours only while it holds.
 */
export function claimNextMail(db: Executor, leaseMs: number): Promise<OutboxRow | undefined> {
  return db
    .updateTable('mail_outbox')
    .set({
      locked_until: sql`now() + make_interval(secs => ${leaseMs / 1000})`,
      attempts: sql`attempts + 1`,
    })
    .where('id', '=', (eb) =>
      eb
        .selectFrom('mail_outbox')
        .select('id')
        .where('sent_at', 'is', null)
        .where('failed_at', 'is', null)
        .where('next_attempt_at', '<=', sql<Date>`now()`)
        .where((w) => w.or([w('locked_until', 'is', null), w('locked_until', '<', sql<Date>`now()`)]))
        .orderBy('next_attempt_at')
        .orderBy('id')
        .limit(1)
        .forUpdate()
        .skipLocked(),
    )
    .returningAll()
    .executeTakeFirst();
}

/** A claim: the message and the attempt count its claim set. */
export interface MailClaim {
  id: number;
  attempts: number;
}

/** Extends a claim's lease to `leaseMs` from now; false when the claim is no longer ours. */
export async function renewMailLease(db: Executor, claim: MailClaim, leaseMs: number): Promise<boolean> {
  const renewed = await db
    .updateTable('mail_outbox')
    .where(ours(claim))
    .set({ locked_until: sql`now() + make_interval(secs => ${leaseMs / 1000})` })
    .returning('id')
    .executeTakeFirst();
  return renewed !== undefined;
}

/** Records a delivery and erases the message, which carried a token; false when the claim was lost. */
export async function markMailSent(db: Executor, claim: MailClaim): Promise<boolean> {
  const marked = await db
    .updateTable('mail_outbox')
    .where(ours(claim))
    .set({ sent_at: sql`now()`, payload: null, locked_until: null, last_error: null })
    .returning('id')
    .executeTakeFirst();
  return marked !== undefined;
}

/**
 * Schedules another attempt, or gives up for good when `retryInMs` is null; false when the claim
 * was lost (the process that holds it now decides).
 */
export async function markMailFailed(db: Executor, claim: MailClaim, error: string, retryInMs: number | null): Promise<boolean> {
  const marked = await db
    .updateTable('mail_outbox')
    .where(ours(claim))
    .set(
      retryInMs === null
        ? { failed_at: sql`now()`, payload: null, locked_until: null, last_error: error }
        : { next_attempt_at: sql`now() + make_interval(secs => ${retryInMs / 1000})`, locked_until: null, last_error: error },
    )
    .returning('id')
    .executeTakeFirst();
  return marked !== undefined;
}

/** The claimed row, while the claim is still the latest and the message neither sent nor given up. */
function ours(claim: MailClaim) {
  return (eb: ExpressionBuilder<Database, 'mail_outbox'>) =>
    eb.and([eb('id', '=', claim.id), eb('attempts', '=', claim.attempts), eb('sent_at', 'is', null), eb('failed_at', 'is', null)]);
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
