import { sql, type Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.

export async function up(db: Kysely<any>): Promise<void> {
  // A user's second factors: TOTP authenticators and WebAuthn passkeys. A TOTP factor is pending
  // (confirmed_at null) until a first code proves the app holds its secret; a passkey is confirmed
  // when it is registered.
  await db.schema
    .createTable('mfa_factors')
    .addColumn('id', 'integer', (col) => col.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('user_id', 'integer', (col) => col.notNull().references('users.id').onDelete('cascade'))
    .addColumn('type', 'text', (col) => col.notNull().check(sql`type in ('totp', 'webauthn')`))
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('confirmed_at', 'timestamptz')
    .addColumn('last_used_at', 'timestamptz')
    // TOTP: the secret, sealed with a key derived from SECRET_KEY; and the last time step accepted,
    // so that a code is taken once and never an older one after it.
    .addColumn('totp_secret_sealed', 'text')
    .addColumn('totp_last_step', 'bigint')
    // WebAuthn: the credential id and COSE public key (base64url), the authenticator's signature
    // counter, its transports, and the user handle the credential was created for.
    .addColumn('credential_id', 'text')
    .addColumn('public_key', 'text')
    .addColumn('sign_count', 'bigint')
    .addColumn('transports', sql`text[]`)
    .addColumn('user_handle', 'text')
    .addCheckConstraint(
      'mfa_factors_shape',
      sql`(type = 'totp' and totp_secret_sealed is not null and credential_id is null)
          or (type = 'webauthn' and credential_id is not null and public_key is not null and sign_count is not null and totp_secret_sealed is null)`,
    )
    .execute();
  await db.schema.createIndex('mfa_factors_user_idx').on('mfa_factors').columns(['user_id', 'id']).execute();
  await db.schema.createIndex('mfa_factors_credential_key').unique().on('mfa_factors').column('credential_id').execute();

  // Recovery codes: stored as SHA-256 hashes of codes with 80 random bits; each works once.
  await db.schema
    .createTable('mfa_recovery_codes')
    .addColumn('id', 'integer', (col) => col.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('user_id', 'integer', (col) => col.notNull().references('users.id').onDelete('cascade'))
    .addColumn('code_hash', 'text', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('used_at', 'timestamptz')
    .execute();
  await db.schema
    .createIndex('mfa_recovery_codes_user_idx')
    .on('mfa_recovery_codes')
    .columns(['user_id', 'code_hash'])
    .where(sql.ref('used_at'), 'is', null)
    .execute();

  // Short-lived, single-use challenges: the mfa_token a password login hands out (stored as a
  // hash), and the WebAuthn challenges of a passkey registration or sign-in.
  await db.schema
    .createTable('mfa_challenges')
    .addColumn('id', 'uuid', (col) => col.primaryKey())
    .addColumn('purpose', 'text', (col) => col.notNull().check(sql`purpose in ('mfa', 'passkey_registration', 'passkey_login')`))
    .addColumn('user_id', 'integer', (col) => col.references('users.id').onDelete('cascade'))
    .addColumn('token_hash', 'text')
    .addColumn('challenge', 'text')
    // A registration's user handle: the one in the creation options, kept with the new passkey.
    .addColumn('user_handle', 'text')
    .addColumn('failures', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (col) => col.notNull())
    .addColumn('used_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('mfa_challenges_token_key').unique().on('mfa_challenges').column('token_hash').execute();
  await db.schema.createIndex('mfa_challenges_expires_idx').on('mfa_challenges').column('expires_at').execute();

  // How each session was signed in (RFC 8176 `amr` values) and the assurance level that gives;
  // sessions opened before second factors existed were opened with a password.
  await db.schema
    .alterTable('sessions')
    .addColumn('amr', sql`text[]`, (col) => col.notNull().defaultTo(sql`'{pwd}'`))
    .execute();
  await db.schema
    .alterTable('sessions')
    .addColumn('aal', 'text', (col) =>
      col
        .notNull()
        .defaultTo('aal1')
        .check(sql`aal in ('aal1', 'aal2')`),
    )
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('sessions').dropColumn('aal').execute();
  await db.schema.alterTable('sessions').dropColumn('amr').execute();
  await db.schema.dropTable('mfa_challenges').execute();
  await db.schema.dropTable('mfa_recovery_codes').execute();
  await db.schema.dropTable('mfa_factors').execute();
}
