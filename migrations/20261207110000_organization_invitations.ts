import { sql, type Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.

export async function up(db: Kysely<any>): Promise<void> {
  // Pending invitations only: accepting, declining or revoking one deletes it (the audit trail
  // keeps what happened), so one pending invitation per address and organisation is a unique key.
  // Deleting the organisation or the role takes its invitations with it.
  await db.schema
    .createTable('organization_invitations')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('organization_id', 'integer', (col) => col.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('email', 'text', (col) => col.notNull())
    .addColumn('role', 'text', (col) => col.notNull().references('organization_roles.key').onDelete('cascade'))
    .addColumn('invited_by', 'integer', (col) => col.references('users.id').onDelete('set null'))
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (col) => col.notNull())
    .addUniqueConstraint('organization_invitations_address_key', ['organization_id', 'email'])
    .execute();
  await db.schema.createIndex('organization_invitations_email_idx').on('organization_invitations').column('email').execute();
  await db.schema.createIndex('organization_invitations_role_idx').on('organization_invitations').column('role').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('organization_invitations').execute();
}
