import { sql, type Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('users')
    .addColumn('id', 'integer', (col) => col.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('email', 'text', (col) => col.notNull())
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('password_hash', 'text', (col) => col.notNull())
    .addColumn('role', 'text', (col) => col.notNull().defaultTo('user').check(sql`role in ('user', 'admin')`))
    .addColumn('is_active', 'boolean', (col) => col.notNull().defaultTo(true))
    .addColumn('email_verified', 'boolean', (col) => col.notNull().defaultTo(false))
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('deleted_at', 'timestamptz')
    .addCheckConstraint('users_email_lower', sql`email = lower(email)`)
    .execute();

  // Unique over every row, deleted ones too: a deleted account keeps its e-mail until restored.
  await db.schema.createIndex('users_email_key').unique().on('users').column('email').execute();
  // Keyset-friendly indexes for the list's sort fields over users that are not deleted.
  for (const column of ['created_at', 'updated_at', 'name']) {
    await db.schema
      .createIndex(`users_live_${column}_idx`)
      .on('users')
      .columns([column, 'id'])
      .where(sql.ref('deleted_at'), 'is', null)
      .execute();
  }
  await db.schema.createIndex('users_deleted_at_idx').on('users').columns(['deleted_at', 'id']).where(sql.ref('deleted_at'), 'is not', null).execute();

  await db.schema
    .createTable('sessions')
    .addColumn('id', 'uuid', (col) => col.primaryKey())
    .addColumn('user_id', 'integer', (col) => col.notNull().references('users.id').onDelete('cascade'))
    .addColumn('refresh_token_hash', 'text', (col) => col.notNull())
    // The token the current one replaced, accepted again only within the reuse grace period.
    .addColumn('previous_token_hash', 'text')
    // Tokens handed out for such grace-period reuses: valid beside the current one until the next rotation.
    .addColumn('grace_token_hashes', sql`text[]`, (col) => col.notNull().defaultTo(sql`'{}'`))
    .addColumn('rotated_at', 'timestamptz')
    .addColumn('ip', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('last_used_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (col) => col.notNull())
    .addColumn('revoked_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('sessions_user_id_idx').on('sessions').columns(['user_id', 'created_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('sessions').execute();
  await db.schema.dropTable('users').execute();
}
