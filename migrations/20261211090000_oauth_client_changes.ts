import { sql, type Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.

export async function up(db: Kysely<any>): Promise<void> {
  // Each process keeps the OAuth clients it has read in memory. A change to a client, by whichever
  // process or command makes it, is announced on the channel `oauth_clients` with the client's id;
  // PostgreSQL delivers it when the transaction commits, and every listening process forgets that
  // client. (On the embedded database nobody listens, and the announcement goes nowhere.)
  await sql`
    create function oauth_clients_announce() returns trigger language plpgsql as $$
    begin
      if tg_op = 'INSERT' then
        perform pg_notify('oauth_clients', new.client_id);
      else
        perform pg_notify('oauth_clients', old.client_id);
      end if;
      return null;
    end $$
  `.execute(db);
  await sql`
    create trigger oauth_clients_announce after insert or update or delete on oauth_clients
      for each row execute function oauth_clients_announce()
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger oauth_clients_announce on oauth_clients`.execute(db);
  await sql`drop function oauth_clients_announce()`.execute(db);
}
