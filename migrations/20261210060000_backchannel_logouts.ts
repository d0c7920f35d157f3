import { sql, type Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.

export async function up(db: Kysely<any>): Promise<void> {
  // The logout tokens owed to clients (OpenID Connect Back-Channel Logout), one per client and ended
  // provider session (its `sid` for that client), written in the transaction that ends the session
  // and delivered like webhooks: claimed with SKIP LOCKED and a lease, retried with backoff. The
  // token is signed at each attempt (it lives two minutes); its `jti` stays the same across them.
  await db.schema
    .createTable('oidc_logout_deliveries')
    .addColumn('id', 'integer', (col) => col.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('client_id', 'text', (col) => col.notNull())
    .addColumn('sid', 'text', (col) => col.notNull())
    .addColumn('account_id', 'text', (col) => col.notNull())
    .addColumn('jti', 'text', (col) => col.notNull().defaultTo(sql`gen_random_uuid()::text`))
    .addColumn('status', 'text', (col) =>
      col
        .notNull()
        .defaultTo('pending')
        .check(sql`status in ('pending', 'delivered', 'failed')`),
    )
    .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('locked_until', 'timestamptz')
    .addColumn('last_status_code', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('delivered_at', 'timestamptz')
    .addColumn('finished_at', 'timestamptz')
    .addUniqueConstraint('oidc_logout_deliveries_client_sid_key', ['client_id', 'sid'])
    .execute();
  await db.schema
    .createIndex('oidc_logout_deliveries_due_idx')
    .on('oidc_logout_deliveries')
    .columns(['next_attempt_at', 'id'])
    .where(sql.ref('status'), '=', 'pending')
    .execute();
  await db.schema
    .createIndex('oidc_logout_deliveries_finished_idx')
    .on('oidc_logout_deliveries')
    .column('finished_at')
    .where(sql.ref('finished_at'), 'is not', null)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('oidc_logout_deliveries').execute();
}
