import { sql, type Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.
//
// The device authorization grant (RFC 8628): a device polls the token endpoint with its device code
// until the person has answered on the hosted page. A poll sooner than the interval since the last is
// answered `slow_down`, and the interval grows by five seconds; when the device last polled, and its
// interval now, are kept on the device code's record, beside the payload the provider rewrites. The
// page finds a device code by the user code the person types.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('oidc_records').addColumn('polled_at', 'timestamptz').addColumn('poll_interval_seconds', 'integer').execute();
  await db.schema
    .createIndex('oidc_records_user_code_idx')
    .on('oidc_records')
    .columns(['model', 'user_code'])
    .where(sql.ref('user_code'), 'is not', null)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('oidc_records_user_code_idx').execute();
  await db.schema.alterTable('oidc_records').dropColumn('polled_at').dropColumn('poll_interval_seconds').execute();
}
