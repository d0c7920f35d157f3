import { sql, type Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.

export async function up(db: Kysely<any>): Promise<void> {
  // Sign-in codes sent by e-mail: a six-digit code and a link token in one mail, used once between
  // them. The code is kept as an HMAC under a key derived from SECRET_KEY (six digits could be
  // guessed back from a plain hash), the token as its SHA-256. `user_id` is null for an address
  // without an account (EMAIL_CODE_SIGNUP), whose code creates it.
  await db.schema
    .createTable('email_codes')
    .addColumn('id', 'integer', (col) => col.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('email', 'text', (col) => col.notNull())
    .addColumn('user_id', 'integer', (col) => col.references('users.id').onDelete('cascade'))
    .addColumn('code_hash', 'text', (col) => col.notNull())
    .addColumn('token_hash', 'text', (col) => col.notNull())
    .addColumn('failures', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (col) => col.notNull())
    .addColumn('used_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('email_codes_token_key').unique().on('email_codes').column('token_hash').execute();
  // The live code of an address, and the mails sent to it within the last hour.
  await db.schema.createIndex('email_codes_email_created_idx').on('email_codes').columns(['email', 'created_at']).execute();

  // How the first step of a login that waits for a second factor was taken (RFC 8176 `amr`
  // values); null for a password, as every step was before other first steps existed.
  await db.schema
    .alterTable('mfa_challenges')
    .addColumn('first_amr', sql`text[]`)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('mfa_challenges').dropColumn('first_amr').execute();
  await db.schema.dropTable('email_codes').execute();
}
