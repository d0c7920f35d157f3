import { sql, type Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.

export async function up(db: Kysely<any>): Promise<void> {
  // When the session's holder last proved who they are: set as the session opens and by a
  // re-authentication, never by a refresh. Sessions opened before it began with their opening.
  await db.schema.alterTable('sessions').addColumn('authenticated_at', 'timestamptz').execute();
  await db
    .updateTable('sessions')
    .set({ authenticated_at: sql`created_at` })
    .execute();
  await db.schema
    .alterTable('sessions')
    .alterColumn('authenticated_at', (column) => column.setNotNull())
    .alterColumn('authenticated_at', (column) => column.setDefault(sql`now()`))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('sessions').dropColumn('authenticated_at').execute();
}
