import type { Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.

export async function up(db: Kysely<any>): Promise<void> {
  // The session's current refresh token, sealed with a key derived from SECRET_KEY: a refresh that
  // loses a race with a rotation, within the grace period, answers with the token that rotation made.
  await db.schema.alterTable('sessions').addColumn('refresh_token_sealed', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('sessions').dropColumn('refresh_token_sealed').execute();
}
