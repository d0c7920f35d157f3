import type { Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.

export async function up(db: Kysely<any>): Promise<void> {
  // The identity a link by hand will join to the user: made when the application exchanges the
  // code with its PKCE verifier, so that only the application that asked for the link completes it.
  await db.schema.alterTable('provider_codes').addColumn('link_subject', 'text').addColumn('link_email', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('provider_codes').dropColumn('link_email').dropColumn('link_subject').execute();
}
