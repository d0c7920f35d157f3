import { sql, type Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.
//
// Lists stay cheap at millions of users:
// - `user_counts` holds how many users are in each state, kept by a trigger in the same transaction
//   as the change, so `meta.total` of an unfiltered list is a read of three rows, not a count(*).
// - Trigram indexes let the `q` substring search use an index instead of reading every row.
// - Partial indexes on id cover cursor pages of the small states (inactive, deleted).

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('user_counts')
    .addColumn('state', 'text', (col) => col.primaryKey().check(sql`state in ('active', 'inactive', 'deleted')`))
    .addColumn('n', 'bigint', (col) => col.notNull())
    .execute();
  await sql`
    create function user_state(deleted_at timestamptz, is_active boolean) returns text
    language sql immutable as $$
      select case when deleted_at is not null then 'deleted' when is_active then 'active' else 'inactive' end
    $$
  `.execute(db);
  await sql`
    insert into user_counts (state, n)
    select s.state, (select count(*) from users u where user_state(u.deleted_at, u.is_active) = s.state)
    from (values ('active'), ('inactive'), ('deleted')) as s(state)
  `.execute(db);

  await sql`
    create function user_counts_track() returns trigger language plpgsql as $$
    declare
      old_state text;
      new_state text;
    begin
      if tg_op = 'TRUNCATE' then
        update user_counts set n = 0;
        return null;
      end if;
      if tg_op in ('UPDATE', 'DELETE') then old_state := user_state(old.deleted_at, old.is_active); end if;
      if tg_op in ('UPDATE', 'INSERT') then new_state := user_state(new.deleted_at, new.is_active); end if;
      if old_state is distinct from new_state then
        -- Rows locked in one order whatever the change, so two opposite moves cannot deadlock.
        perform 1 from user_counts where state in (old_state, new_state) order by state for update;
        update user_counts
          set n = n + (case when state = new_state then 1 else 0 end) - (case when state = old_state then 1 else 0 end)
          where state in (old_state, new_state);
      end if;
      return null;
    end
    $$
  `.execute(db);
  await sql`create trigger users_count_rows after insert or update of deleted_at, is_active or delete on users for each row execute function user_counts_track()`.execute(db);
  await sql`create trigger users_count_truncate after truncate on users for each statement execute function user_counts_track()`.execute(db);

  // Trusted since PostgreSQL 13: the database's owner may create it without being a superuser.
  await sql`create extension if not exists pg_trgm`.execute(db);
  await sql`create index users_email_trgm_idx on users using gin (email gin_trgm_ops)`.execute(db);
  await sql`create index users_name_trgm_idx on users using gin (lower(name) gin_trgm_ops)`.execute(db);

  await sql`create index users_inactive_id_idx on users (id) where deleted_at is null and not is_active`.execute(db);
  await sql`create index users_deleted_id_idx on users (id) where deleted_at is not null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index users_deleted_id_idx`.execute(db);
  await sql`drop index users_inactive_id_idx`.execute(db);
  await sql`drop index users_name_trgm_idx`.execute(db);
  await sql`drop index users_email_trgm_idx`.execute(db);
  await sql`drop trigger users_count_truncate on users`.execute(db);
  await sql`drop trigger users_count_rows on users`.execute(db);
  await sql`drop function user_counts_track()`.execute(db);
  await sql`drop function user_state(timestamptz, boolean)`.execute(db);
  await db.schema.dropTable('user_counts').execute();
}
