import type { Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.

export async function up(db: Kysely<any>): Promise<void> {
  // Whether an admin lets the provider's word that an address is unverified stand as proof all the same.
  await db.schema
    .alterTable('identity_providers')
    .addColumn('trust_email', 'boolean', (col) => col.notNull().defaultTo(false))
    .execute();

  // A provider sign-in whose address the provider did not vouch for waits for a code mailed to it:
  // its code names no user yet, only the identity (subject, e-mail, name) to sign in once proven.
  await db.schema
    .alterTable('provider_codes')
    .alterColumn('user_id', (col) => col.dropNotNull())
    .execute();
  await db.schema.alterTable('provider_codes').addColumn('link_name', 'text').execute();

  // The code mailed for such a sign-in: an e-mailed code like the others (same limits per address),
  // but found by its verification token and good only for the provider sign-in it names.
  await db.schema
    .alterTable('email_codes')
    .addColumn('provider_code_id', 'integer', (col) => col.references('provider_codes.id').onDelete('cascade'))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('email_codes').dropColumn('provider_code_id').execute();
  await db.schema.alterTable('provider_codes').dropColumn('link_name').execute();
  await db.schema
    .alterTable('provider_codes')
    .alterColumn('user_id', (col) => col.setNotNull())
    .execute();
  await db.schema.alterTable('identity_providers').dropColumn('trust_email').execute();
}
