import { sql, type Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.

export async function up(db: Kysely<any>): Promise<void> {
  // The domains an organisation claims, each with the token its DNS TXT record must hold. Several
  // organisations may claim a domain; only one may have verified it.
  await db.schema
    .createTable('organization_domains')
    .addColumn('organization_id', 'integer', (col) => col.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('domain', 'text', (col) => col.notNull())
    .addColumn('verification_token', 'text', (col) => col.notNull())
    .addColumn('verified_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('organization_domains_pkey', ['organization_id', 'domain'])
    .execute();
  await db.schema
    .createIndex('organization_domains_verified_idx')
    .on('organization_domains')
    .column('domain')
    .unique()
    .where(sql.ref('verified_at'), 'is not', null)
    .execute();
  // How an organisation's people sign in. A provider or a role that goes takes its part of the policy with it.
  await db.schema
    .createTable('organization_sign_in')
    .addColumn('organization_id', 'integer', (col) => col.primaryKey().references('organizations.id').onDelete('cascade'))
    .addColumn('mfa_required', 'boolean', (col) => col.notNull().defaultTo(false))
    .addColumn('identity_provider_id', 'integer', (col) => col.references('identity_providers.id').onDelete('set null'))
    .addColumn('sso_required', 'boolean', (col) => col.notNull().defaultTo(false))
    .addColumn('auto_join_role', 'text', (col) => col.references('organization_roles.key').onDelete('set null'))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('organization_sign_in').execute();
  await db.schema.dropTable('organization_domains').execute();
}
