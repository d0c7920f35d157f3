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
  await db.schema.createIndex('oidc_logout_deliveries_created_idx').on('oidc_logout_deliveries').column('created_at').execute();
  await db.schema
    .createIndex('oidc_logout_deliveries_finished_idx')
    .on('oidc_logout_deliveries')
    .column('finished_at')
    .where(sql.ref('finished_at'), 'is not', null)
    .execute();

  // Queues a logout for each client with a backchannel_logout_uri in each live provider session that
  // matches (by the service session that opened it, the person, or one client's grant in it). A
  // provider session is live while its service session is, or was until this transaction (`now()` is
  // the transaction's start, so a service session revoked in it reads `revoked_at = now()`).
  await sql`
    create function oidc_queue_session_logouts(p_service_session uuid, p_user integer, p_client text, p_grant text)
    returns void language sql as $$
      insert into oidc_logout_deliveries (client_id, sid, account_id)
      select a.client_id, a.entry ->> 'sid', r.payload ->> 'accountId'
        from oidc_records r
        join sessions s on s.id = r.service_session_id
        cross join lateral jsonb_each(case when jsonb_typeof(r.payload -> 'authorizations') = 'object'
                                          then r.payload -> 'authorizations' else '{}'::jsonb end) as a(client_id, entry)
        join oauth_clients c on c.client_id = a.client_id
       where r.model = 'Session'
         and (p_service_session is null or r.service_session_id = p_service_session)
         and (p_user is null or r.user_id = p_user)
         and (p_client is null or (a.client_id = p_client and a.entry ->> 'grantId' = p_grant))
         and (r.expires_at is null or r.expires_at > now())
         and (s.revoked_at is null or s.revoked_at = now()) and s.expires_at > now()
         and coalesce(c.metadata ->> 'backchannel_logout_uri', '') <> ''
         and a.entry ->> 'sid' is not null and r.payload ->> 'accountId' is not null
      on conflict (client_id, sid) do nothing
    $$`.execute(db);

  // The triggers that end provider sessions with their service session, or with their person
  // disabled or deleted, queue their logouts first, whichever code path ended them.
  await sql`
    create or replace function oidc_end_service_session() returns trigger language plpgsql as $$
    begin
      perform oidc_queue_session_logouts(new.id, null, null, null);
      delete from oidc_records where session_uid in (
        select uid from oidc_records where model = 'Session' and service_session_id = new.id and uid is not null
      );
      delete from oidc_records where model = 'Session' and service_session_id = new.id;
      return null;
    end
    $$`.execute(db);
  await sql`
    create or replace function oidc_end_user() returns trigger language plpgsql as $$
    begin
      perform oidc_queue_session_logouts(null, new.id, null, null);
      delete from oidc_records where user_id = new.id and model <> 'Grant';
      return null;
    end
    $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    create or replace function oidc_end_service_session() returns trigger language plpgsql as $$
    begin
      delete from oidc_records where session_uid in (
        select uid from oidc_records where model = 'Session' and service_session_id = new.id and uid is not null
      );
      delete from oidc_records where model = 'Session' and service_session_id = new.id;
      return null;
    end
    $$`.execute(db);
  await sql`
    create or replace function oidc_end_user() returns trigger language plpgsql as $$
    begin
      delete from oidc_records where user_id = new.id and model <> 'Grant';
      return null;
    end
    $$`.execute(db);
  await sql`drop function oidc_queue_session_logouts(uuid, integer, text, text)`.execute(db);
  await db.schema.dropTable('oidc_logout_deliveries').execute();
}
