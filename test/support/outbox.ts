import type { Kysely } from 'kysely';
import type { Database } from '../../src/db/types.js';
import { until } from './wait.js';

/** Waits until every mail queued for `recipient` has gone out (or failed for good). */
export async function outboxDrained(db: Kysely<Database>, recipient: string): Promise<void> {
  await until(
    async () =>
      (
        await db
          .selectFrom('mail_outbox')
          .select('id')
          .where('recipient', '=', recipient)
          .where('sent_at', 'is', null)
          .where('failed_at', 'is', null)
          .execute()
      ).length === 0,
    `mail to ${recipient} to go out`,
  );
}
