import { sql, type Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.

export async function up(db: Kysely<any>): Promise<void> {
  // The shared rate-limit and login-failure counters, in the layout rate-limiter-flexible reads and
  // writes. Made here rather than by the limiter at start, where two processes starting at once
  // could both try to create it; a database that already has it from the limiter keeps its rows.
  await db.schema
    .createTable('rate_limits')
    .ifNotExists()
    .addColumn('key', 'varchar(255)', (col) => col.primaryKey())
    .addColumn('points', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('expire', 'bigint')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists rate_limits`.execute(db);
}
