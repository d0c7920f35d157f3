import { sql, type Kysely } from 'kysely';

// Frozen once released: later changes go in new migrations.
//
// The members list stays cheap in an organisation of any size:
// - `organization_member_counts` holds how many members of each organisation have an account that is
//   not deleted, kept by triggers in the same transaction as the change (a membership added or
//   removed, an account deleted or restored), so `meta.total` is a read of one row, not a count(*)
//   over a join of every membership with its user.
// - The page, by when members joined, reads its 20 rows from an index in that order instead of
//   sorting every membership of the organisation.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('organization_member_counts')
    .addColumn('organization_id', 'integer', (col) => col.primaryKey().references('organizations.id').onDelete('cascade'))
    .addColumn('n', 'bigint', (col) => col.notNull())
    .execute();
  await sql`
    insert into organization_member_counts (organization_id, n)
    select o.id, (select count(*) from organization_members m join users u on u.id = m.user_id
                  where m.organization_id = o.id and u.deleted_at is null)
    from organizations o
  `.execute(db);

  // A membership counts while its user's account is not deleted. An organisation's row is made by its
  // first counted member; one being deleted takes its row with it, so the removals its deletion
  // cascades to only update (and find nothing).
  await sql`
    create function organization_member_counts_track() returns trigger language plpgsql as $$
    begin
      if tg_op in ('UPDATE', 'DELETE') and exists (select 1 from users where id = old.user_id and deleted_at is null) then
        update organization_member_counts set n = n - 1 where organization_id = old.organization_id;
      end if;
      if tg_op in ('UPDATE', 'INSERT') and exists (select 1 from users where id = new.user_id and deleted_at is null) then
        insert into organization_member_counts as c (organization_id, n) values (new.organization_id, 1)
          on conflict (organization_id) do update set n = c.n + 1;
      end if;
      return null;
    end
    $$
  `.execute(db);
  await sql`
    create trigger organization_members_count_rows after insert or update of organization_id, user_id or delete on organization_members
    for each row execute function organization_member_counts_track()
  `.execute(db);

  // An account deleted or restored leaves or rejoins the count of each organisation it is a member of;
  // one removed from the table (before its memberships go with it) leaves it if it counted.
  await sql`
    create function organization_member_counts_track_user() returns trigger language plpgsql as $$
    declare
      delta int;
      subject bigint;
    begin
      if tg_op = 'DELETE' then
        if old.deleted_at is not null then return old; end if;
        delta := -1;
        subject := old.id;
      elsif (old.deleted_at is null) = (new.deleted_at is null) then
        return null;
      else
        delta := case when new.deleted_at is null then 1 else -1 end;
        subject := new.id;
      end if;
      -- Rows locked in one order whatever the change, so two users' changes cannot deadlock.
      perform 1 from organization_member_counts
        where organization_id in (select organization_id from organization_members where user_id = subject)
        order by organization_id for update;
      insert into organization_member_counts as c (organization_id, n)
        select organization_id, greatest(delta, 0) from organization_members where user_id = subject
        on conflict (organization_id) do update set n = c.n + delta;
      if tg_op = 'DELETE' then return old; end if;
      return null;
    end
    $$
  `.execute(db);
  await sql`
    create trigger users_organization_member_counts after update of deleted_at on users
    for each row execute function organization_member_counts_track_user()
  `.execute(db);
  await sql`
    create trigger users_organization_member_counts_delete before delete on users
    for each row execute function organization_member_counts_track_user()
  `.execute(db);

  await db.schema
    .createIndex('organization_members_joined_idx')
    .on('organization_members')
    .columns(['organization_id', 'joined_at', 'user_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('organization_members_joined_idx').execute();
  await sql`drop trigger users_organization_member_counts_delete on users`.execute(db);
  await sql`drop trigger users_organization_member_counts on users`.execute(db);
  await sql`drop trigger organization_members_count_rows on organization_members`.execute(db);
  await sql`drop function organization_member_counts_track_user()`.execute(db);
  await sql`drop function organization_member_counts_track()`.execute(db);
  await db.schema.dropTable('organization_member_counts').execute();
}
