import { sql } from 'kysely';
import type { Executor } from '../db/types.js';

/** One round trip to the database; throws when it does not answer. */
export async function pingDatabase(db: Executor): Promise<void> {
  await sql`select 1`.execute(db);
}
