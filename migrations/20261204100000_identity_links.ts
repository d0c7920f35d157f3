import { sql, type Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.

export async function up(db: Kysely<any>): Promise<void> {
  // A flow started by a signed-in user to link a provider to their account: the account it links to.
  await db.schema
    .alterTable('provider_flows')
    .addColumn('link_user_id', 'integer', (col) => col.references('users.id').onDelete('cascade'))
    .execute();

  // Whether the account has a password its owner knows. Accounts made by a provider or an e-mailed
  // code hold a random hash nobody knows until forgot-password, a reset or an admin sets one.
  await db.schema
    .alterTable('users')
    .addColumn('password_set', 'boolean', (col) => col.notNull().defaultTo(true))
    .execute();
  // Accounts made so before this column, as the audit trail tells, that have not set a password since.
  await sql`
    update users set password_set = false
    where id in (
      select subject_user_id from audit_events
      where event_type = 'user.registered' and (details ? 'provider' or details->>'method' = 'email_code')
    )
    and id not in (
      select subject_user_id from audit_events
      where subject_user_id is not null
        and (event_type in ('password.changed', 'password.reset_completed')
             or (event_type = 'user.updated' and details->'fields' ? 'password'))
    )`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('users').dropColumn('password_set').execute();
  await db.schema.alterTable('provider_flows').dropColumn('link_user_id').execute();
}
