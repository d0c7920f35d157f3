import { CompiledQuery, sql, type SelectQueryBuilder } from 'kysely';
import { preparedShape, preparedStatement } from '../db/prepared.js';
import type { Database, Executor, NewUserRow, UserRow, UserUpdate } from '../db/types.js';

export type UserStatus = 'active' | 'inactive' | 'deleted';
export type SortField = 'id' | 'email' | 'name' | 'created_at' | 'updated_at';

export interface UserFilter {
  status?: UserStatus;
  /** Case-insensitive substring of e-mail or name. */
  q?: string;
}

/** A user by id, deleted or not. The provider reads one for every token it answers about a person. */
export async function findUserById(db: Executor, id: number): Promise<UserRow | undefined> {
  return (await db.executeQuery<UserRow>(CompiledQuery.raw(USER_BY_ID_SQL, [id]))).rows[0];
}

const USER_BY_ID_SQL = preparedStatement(
  'user_by_id',
  `select id, email, name, password_hash, role, is_active, email_verified, pending_email, created_at, updated_at, deleted_at
  from users where id = $1`,
);

/** The users with these ids, deleted or not, in no particular order. */
export function findUsersByIds(db: Executor, ids: readonly number[]): Promise<UserRow[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return db.selectFrom('users').selectAll().where('id', 'in', ids).execute();
}

export function findUserByEmail(db: Executor, email: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
}

/** Inserts a user; undefined when the e-mail is taken (a race included). */
export function insertUser(db: Executor, row: NewUserRow): Promise<UserRow | undefined> {
  return db
    .insertInto('users')
    .values(row)
    .onConflict((oc) => oc.column('email').doNothing())
    .returningAll()
    .executeTakeFirst();
}

/**
 * Whether the account has a password its owner knows (`users.password_set`): not the random one an
 * account made by a provider or an e-mailed code holds. Kept out of UserRow, which the token checks
 * fill from a query of their own; read it here.
 */
type PasswordMarker = { users: { id: number; password_set: boolean } };

/** Marks a new account's password as one nobody knows. */
export async function markPasswordUnknown(db: Executor, id: number): Promise<void> {
  await db.withTables<PasswordMarker>().updateTable('users').set({ password_set: false }).where('id', '=', id).execute();
}

/** Whether the user has a password they know; false for an unknown user. */
export async function hasKnownPassword(db: Executor, id: number): Promise<boolean> {
  const row = await db.withTables<PasswordMarker>().selectFrom('users').select('password_set').where('id', '=', id).executeTakeFirst();
  return row?.password_set === true;
}

/** Updates a user that is not deleted; undefined when there is none. A new password hash is one its owner knows. */
export function updateLiveUser(db: Executor, id: number, patch: UserUpdate): Promise<UserRow | undefined> {
  return db
    .withTables<PasswordMarker>()
    .updateTable('users')
    .set({ ...patch, ...(patch.password_hash !== undefined ? { password_set: true } : {}), updated_at: sql`now()` })
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/**
 * The ids of every live, active admin, by id, their rows locked until the transaction ends (in id
 * order, so that two transactions locking them cannot deadlock).
 */
export async function lockActiveAdmins(db: Executor): Promise<number[]> {
  const rows = await db
    .selectFrom('users')
    .select('id')
    .where('role', '=', 'admin')
    .where('is_active', '=', true)
    .where('deleted_at', 'is', null)
    .orderBy('id')
    .forUpdate()
    .execute();
  return rows.map((row) => row.id);
}

export function softDeleteUser(db: Executor, id: number): Promise<UserRow | undefined> {
  return db
    .updateTable('users')
    .set({ deleted_at: sql`now()`, updated_at: sql`now()` })
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

export function restoreUser(db: Executor, id: number): Promise<UserRow | undefined> {
  return db
    .updateTable('users')
    .set({ deleted_at: null, updated_at: sql`now()` })
    .where('id', '=', id)
    .where('deleted_at', 'is not', null)
    .returningAll()
    .executeTakeFirst();
}

function filtered<O>(query: SelectQueryBuilder<Database, 'users', O>, filter: UserFilter) {
  let q = query;
  if (filter.status === 'deleted') q = q.where('deleted_at', 'is not', null);
  else q = q.where('deleted_at', 'is', null);
  if (filter.status === 'active') q = q.where('is_active', '=', true);
  if (filter.status === 'inactive') q = q.where('is_active', '=', false);
  if (filter.q) {
    const pattern = `%${filter.q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    q = q.where((eb) => eb.or([eb('email', 'like', pattern), eb(eb.fn('lower', ['name']), 'like', pattern)]));
  }
  return q;
}

export interface PageQuery extends UserFilter {
  sort: SortField;
  descending: boolean;
  limit: number;
  offset: number;
}

/** The columns a listed user is shown with: no hash, nothing the view does not show. */
const LISTED_COLUMNS = [
  'id',
  'email',
  'name',
  'role',
  'is_active',
  'email_verified',
  'pending_email',
  'created_at',
  'updated_at',
  'deleted_at',
] as const;

export type ListedUser = Pick<UserRow, (typeof LISTED_COLUMNS)[number]>;

/**
 * One page of users and the total that match the filter. Without a search, one statement answers
 * both: the page, each row carrying the total the counters give (an uncorrelated subquery,
 * evaluated once), and its text depends only on the status, the sort and the direction, so it is
 * prepared once per connection for each such shape. A page past the end has no row to carry the
 * total, which is then asked for on its own. A search has two statements, sent unnamed: its plan
 * depends on the pattern.
 */
export async function listUsersPage(db: Executor, query: PageQuery): Promise<{ rows: ListedUser[]; total: number }> {
  const direction = query.descending ? 'desc' : 'asc';
  const page = filtered(db.selectFrom('users').select(LISTED_COLUMNS), query)
    .orderBy(query.sort, direction)
    .orderBy('id', direction)
    .limit(query.limit)
    .offset(query.offset);
  if (query.q) {
    const [rows, total] = await Promise.all([page.execute(), countUsers(db, query)]);
    return { rows, total };
  }
  const compiled = page
    .select((eb) =>
      eb
        .selectFrom('user_counts')
        .select(countersTotal.as('total'))
        .where('state', 'in', STATES[query.status ?? 'live'])
        .as('total'),
    )
    .compile();
  preparedShape('users_page', compiled.sql);
  const { rows } = await db.executeQuery(compiled);
  if (rows.length === 0) return { rows: [], total: await countUsers(db, query) };
  return { rows: rows.map(({ total: _total, ...row }) => row), total: Number(rows[0].total) };
}

/** States each status filter covers; no status means every user that is not deleted. */
const STATES: Record<UserStatus | 'live', Array<'active' | 'inactive' | 'deleted'>> = {
  live: ['active', 'inactive'],
  active: ['active'],
  inactive: ['inactive'],
  deleted: ['deleted'],
};

/** The sum of the per-state counters of the rows it is selected over. */
const countersTotal = sql<number>`coalesce(sum(n), 0)::int`;

/**
 * The exact number of users that match. Without a search it is the sum of the counters the database
 * keeps per state (a read of up to three rows at any table size); with one, a count over the rows the
 * trigram indexes find.
 */
async function countUsers(db: Executor, filter: UserFilter): Promise<number> {
  if (!filter.q) {
    const row = await db
      .selectFrom('user_counts')
      .select(countersTotal.as('total'))
      .where('state', 'in', STATES[filter.status ?? 'live'])
      .executeTakeFirstOrThrow();
    return row.total;
  }
  const row = await filtered(db.selectFrom('users').select(sql<number>`count(*)::int`.as('total')), filter).executeTakeFirstOrThrow();
  return row.total;
}

/** Up to `limit` users with an id above `after`, by id ascending; prepared per status when there is no search. */
export async function listUsersAfter(db: Executor, filter: UserFilter, after: number, limit: number): Promise<ListedUser[]> {
  const query = filtered(db.selectFrom('users').select(LISTED_COLUMNS), filter).where('id', '>', after).orderBy('id', 'asc').limit(limit);
  if (filter.q) return query.execute();
  const compiled = query.compile();
  preparedShape('users_after', compiled.sql);
  return (await db.executeQuery(compiled)).rows;
}
