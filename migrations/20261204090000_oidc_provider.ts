import { sql, type Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.

export async function up(db: Kysely<any>): Promise<void> {
  // The applications that sign people in through the service's OpenID Connect provider: made by an
  // admin, or registered by themselves (RFC 7591). `metadata` is the client's metadata as the
  // provider reads it, without the secret, which is sealed under a key derived from SECRET_KEY.
  await db.schema
    .createTable('oauth_clients')
    .addColumn('client_id', 'text', (col) => col.primaryKey())
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('type', 'text', (col) => col.notNull().check(sql`type in ('confidential', 'public')`))
    .addColumn('client_secret_sealed', 'text')
    .addColumn('metadata', 'jsonb', (col) => col.notNull())
    .addColumn('first_party', 'boolean', (col) => col.notNull().defaultTo(false))
    .addColumn('registered', 'boolean', (col) => col.notNull().defaultTo(false))
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();

  // Everything else the provider keeps (sessions, interactions, grants, codes, tokens, registration
  // access tokens), one row per record, by the provider's model name and the record's id. The
  // columns beside the payload are the ones records are looked up or removed by: the grant a token
  // belongs to, the provider session (its `uid`) it was issued through, the person, and, for a
  // provider session, the service session the hosted sign-in opened.
  await db.schema
    .createTable('oidc_records')
    .addColumn('model', 'text', (col) => col.notNull())
    .addColumn('id', 'text', (col) => col.notNull())
    .addColumn('payload', 'jsonb', (col) => col.notNull())
    .addColumn('grant_id', 'text')
    .addColumn('uid', 'text')
    .addColumn('session_uid', 'text')
    .addColumn('user_code', 'text')
    .addColumn('user_id', 'integer', (col) => col.references('users.id').onDelete('cascade'))
    .addColumn('service_session_id', 'uuid', (col) => col.references('sessions.id').onDelete('cascade'))
    .addColumn('client_id', 'text')
    .addColumn('expires_at', 'timestamptz')
    .addColumn('consumed_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('oidc_records_pkey', ['model', 'id'])
    .execute();
  await db.schema
    .createIndex('oidc_records_grant_idx')
    .on('oidc_records')
    .column('grant_id')
    .where(sql.ref('grant_id'), 'is not', null)
    .execute();
  await db.schema.createIndex('oidc_records_uid_idx').on('oidc_records').column('uid').where(sql.ref('uid'), 'is not', null).execute();
  await db.schema
    .createIndex('oidc_records_session_uid_idx')
    .on('oidc_records')
    .column('session_uid')
    .where(sql.ref('session_uid'), 'is not', null)
    .execute();
  await db.schema
    .createIndex('oidc_records_user_idx')
    .on('oidc_records')
    .columns(['user_id', 'model'])
    .where(sql.ref('user_id'), 'is not', null)
    .execute();
  await db.schema
    .createIndex('oidc_records_service_session_idx')
    .on('oidc_records')
    .column('service_session_id')
    .where(sql.ref('service_session_id'), 'is not', null)
    .execute();
  await db.schema.createIndex('oidc_records_expires_idx').on('oidc_records').column('expires_at').execute();
  await db.schema
    .createIndex('oidc_records_client_idx')
    .on('oidc_records')
    .column('client_id')
    .where(sql.ref('client_id'), 'is not', null)
    .execute();

  // The provider's signing key made for development when no key is configured, sealed.
  await db.schema
    .createTable('oidc_keys')
    .addColumn('id', 'integer', (col) => col.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('algorithm', 'text', (col) => col.notNull())
    .addColumn('private_key_sealed', 'text', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();

  // A service session that ends (revoked by the person, an admin, logout or the command line) ends
  // the provider sessions it opened and every code and token issued through them, in the same
  // transaction, whichever code path revoked it.
  await sql`
    create function oidc_end_service_session() returns trigger language plpgsql as $$
    begin
      delete from oidc_records where session_uid in (
        select uid from oidc_records where model = 'Session' and service_session_id = new.id and uid is not null
      );
      delete from oidc_records where model = 'Session' and service_session_id = new.id;
      return null;
    end
    $$`.execute(db);
  await sql`
    create trigger sessions_end_oidc after update of revoked_at on sessions for each row
    when (new.revoked_at is not null and old.revoked_at is null) execute function oidc_end_service_session()`.execute(db);

  // A user disabled or deleted loses every provider session, code and token at once; the grants
  // (what the person allowed) stay, as the service's own records do, for a restored account.
  await sql`
    create function oidc_end_user() returns trigger language plpgsql as $$
    begin
      delete from oidc_records where user_id = new.id and model <> 'Grant';
      return null;
    end
    $$`.execute(db);
  await sql`
    create trigger users_end_oidc after update of is_active, deleted_at on users for each row
    when ((new.is_active = false and old.is_active = true) or (new.deleted_at is not null and old.deleted_at is null))
    execute function oidc_end_user()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger users_end_oidc on users`.execute(db);
  await sql`drop function oidc_end_user()`.execute(db);
  await sql`drop trigger sessions_end_oidc on sessions`.execute(db);
  await sql`drop function oidc_end_service_session()`.execute(db);
  await db.schema.dropTable('oidc_keys').execute();
  await db.schema.dropTable('oidc_records').execute();
  await db.schema.dropTable('oauth_clients').execute();
}
