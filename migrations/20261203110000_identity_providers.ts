import { sql, type Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.

export async function up(db: Kysely<any>): Promise<void> {
  // Upstream providers people sign in with. The client secret is kept sealed (AES-256-GCM under a
  // key derived from SECRET_KEY), never in clear; `claims` names the user-info fields to read.
  await db.schema
    .createTable('identity_providers')
    .addColumn('id', 'integer', (col) => col.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('slug', 'text', (col) => col.notNull().unique())
    .addColumn('kind', 'text', (col) => col.notNull().check(sql`kind in ('oidc', 'oauth2')`))
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('client_id', 'text', (col) => col.notNull())
    .addColumn('client_secret_sealed', 'text')
    .addColumn('issuer', 'text')
    .addColumn('authorization_url', 'text')
    .addColumn('token_url', 'text')
    .addColumn('userinfo_url', 'text')
    .addColumn('emails_url', 'text')
    .addColumn('scopes', sql`text[]`, (col) => col.notNull())
    .addColumn('claims', 'jsonb', (col) => col.notNull())
    .addColumn('enabled', 'boolean', (col) => col.notNull().defaultTo(true))
    .addColumn('allow_signup', 'boolean', (col) => col.notNull().defaultTo(true))
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('identity_providers').execute();
}
