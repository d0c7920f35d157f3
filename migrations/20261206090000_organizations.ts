import { sql, type Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.

export async function up(db: Kysely<any>): Promise<void> {
  // The deployment's customers. A slug names one in addresses; it is unique.
  await db.schema
    .createTable('organizations')
    .addColumn('id', 'integer', (col) => col.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('slug', 'text', (col) => col.notNull().unique())
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
  // The roles every organisation shares: the three built in, and the deployment's own.
  await db.schema
    .createTable('organization_roles')
    .addColumn('key', 'text', (col) => col.primaryKey())
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('permissions', sql`text[]`, (col) => col.notNull())
    .addColumn('built_in', 'boolean', (col) => col.notNull().defaultTo(false))
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
  const all = ['org:read', 'org:update', 'org:delete', 'members:read', 'members:invite', 'members:update', 'members:remove'];
  await db
    .insertInto('organization_roles')
    .values([
      { key: 'owner', name: 'Owner', permissions: all, built_in: true },
      { key: 'admin', name: 'Admin', permissions: all.filter((p) => p !== 'org:delete'), built_in: true },
      { key: 'member', name: 'Member', permissions: ['org:read', 'members:read'], built_in: true },
    ])
    .execute();
  // A person's membership and role. Deleting the organisation or the user deletes it; a role still
  // held cannot be deleted.
  await db.schema
    .createTable('organization_members')
    .addColumn('organization_id', 'integer', (col) => col.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('user_id', 'integer', (col) => col.notNull().references('users.id').onDelete('cascade'))
    .addColumn('role', 'text', (col) => col.notNull().references('organization_roles.key').onDelete('restrict'))
    .addColumn('joined_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('organization_members_pkey', ['organization_id', 'user_id'])
    .execute();
  await db.schema.createIndex('organization_members_user_idx').on('organization_members').column('user_id').execute();
  await db.schema.createIndex('organization_members_role_idx').on('organization_members').column('role').execute();
  // The organisation a session acts for (its tokens' `org_id`); forgotten when the organisation goes.
  await db.schema
    .alterTable('sessions')
    .addColumn('organization_id', 'integer', (col) => col.references('organizations.id').onDelete('set null'))
    .execute();
  await db.schema.createIndex('sessions_organization_idx').on('sessions').column('organization_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('sessions').dropColumn('organization_id').execute();
  await db.schema.dropTable('organization_members').execute();
  await db.schema.dropTable('organization_roles').execute();
  await db.schema.dropTable('organizations').execute();
}
