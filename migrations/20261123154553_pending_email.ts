import type { Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.

export async function up(db: Kysely<any>): Promise<void> {
  // A new address a user asked for, not yet confirmed through the link sent to it. Sign-in, recovery
  // and every mail stay on `email` until then. Not unique: whoever confirms an address first gets it.
  await db.schema.alterTable('users').addColumn('pending_email', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('users').dropColumn('pending_email').execute();
}
