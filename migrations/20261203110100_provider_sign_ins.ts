import { sql, type Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.

export async function up(db: Kysely<any>): Promise<void> {
  // An identity: a provider's subject, linked to one user. A subject signs in one user only.
  await db.schema
    .createTable('user_identities')
    .addColumn('id', 'integer', (col) => col.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('user_id', 'integer', (col) => col.notNull().references('users.id').onDelete('cascade'))
    .addColumn('provider_id', 'integer', (col) => col.notNull().references('identity_providers.id').onDelete('cascade'))
    .addColumn('subject', 'text', (col) => col.notNull())
    .addColumn('email', 'text')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('last_used_at', 'timestamptz')
    .addUniqueConstraint('user_identities_provider_subject_key', ['provider_id', 'subject'])
    .execute();
  await db.schema.createIndex('user_identities_user_idx').on('user_identities').column('user_id').execute();

  // A sign-in under way at a provider: found by the SHA-256 of its `state`, used once within its
  // lifetime. The PKCE verifier towards the provider is sealed; the application's challenge is kept
  // for the code it will get.
  await db.schema
    .createTable('provider_flows')
    .addColumn('id', 'integer', (col) => col.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('provider_id', 'integer', (col) => col.notNull().references('identity_providers.id').onDelete('cascade'))
    .addColumn('state_hash', 'text', (col) => col.notNull().unique())
    .addColumn('nonce', 'text')
    .addColumn('code_verifier_sealed', 'text', (col) => col.notNull())
    .addColumn('redirect_to', 'text', (col) => col.notNull())
    .addColumn('code_challenge', 'text', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (col) => col.notNull())
    .addColumn('used_at', 'timestamptz')
    .execute();

  // The one-time code an application exchanges, with its PKCE verifier, for a session.
  await db.schema
    .createTable('provider_codes')
    .addColumn('id', 'integer', (col) => col.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('code_hash', 'text', (col) => col.notNull().unique())
    .addColumn('user_id', 'integer', (col) => col.notNull().references('users.id').onDelete('cascade'))
    .addColumn('provider_id', 'integer', (col) => col.notNull().references('identity_providers.id').onDelete('cascade'))
    .addColumn('code_challenge', 'text', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (col) => col.notNull())
    .addColumn('used_at', 'timestamptz')
    .execute();

  // The provider a session was signed in with (its slug), and the provider a second-factor step
  // continues, so that the session it opens names it.
  await db.schema.alterTable('sessions').addColumn('provider', 'text').execute();
  await db.schema.alterTable('mfa_challenges').addColumn('provider', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('mfa_challenges').dropColumn('provider').execute();
  await db.schema.alterTable('sessions').dropColumn('provider').execute();
  await db.schema.dropTable('provider_codes').execute();
  await db.schema.dropTable('provider_flows').execute();
  await db.schema.dropTable('user_identities').execute();
}
