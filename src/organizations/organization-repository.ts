import { sql, type Generated, type Selectable } from 'kysely';
import type { Executor, Timestamp } from '../db/types.js';

// Type aliases rather than interfaces: withTables wants types with an implicit index signature.
export type OrganizationTable = {
  id: Generated<number>;
  slug: string;
  name: string;
  created_at: Timestamp;
  updated_at: Timestamp;
};

export type OrganizationRoleTable = {
  key: string;
  name: string;
  permissions: string[];
  built_in: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
};

export type OrganizationMemberTable = {
  organization_id: number;
  user_id: number;
  role: string;
  joined_at: Timestamp;
};

type OrganizationTables = {
  organizations: OrganizationTable;
  organization_roles: OrganizationRoleTable;
  organization_members: OrganizationMemberTable;
  organization_member_counts: { organization_id: number; n: string };
};

export type OrganizationRow = Selectable<OrganizationTable>;
export type OrganizationRoleRow = Selectable<OrganizationRoleTable>;

/** A person's place in an organisation: their role and what it allows. */
export interface Membership {
  role: string;
  permissions: string[];
}

/** A membership as a sign-in needs it: also whether the organisation asks its members for a second factor. */
export interface SignInMembership extends Membership {
  mfa_required: boolean;
}

/** A member as the member list shows them. */
export interface MemberRow {
  user_id: number;
  email: string;
  name: string;
  role: string;
  joined_at: Date;
}

const orgs = (db: Executor) => db.withTables<OrganizationTables>();

/** `%q%` for LIKE, with the pattern's own characters escaped, lower-cased. */
const containing = (q: string) => `%${q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

// Organisations

/** The new organisation, or undefined when its slug is taken. */
export function insertOrganization(db: Executor, values: { slug: string; name: string }): Promise<OrganizationRow | undefined> {
  return orgs(db)
    .insertInto('organizations')
    .values(values)
    .onConflict((oc) => oc.column('slug').doNothing())
    .returningAll()
    .executeTakeFirst();
}

export function findOrganization(db: Executor, id: number): Promise<OrganizationRow | undefined> {
  return orgs(db).selectFrom('organizations').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findOrganizationBySlug(db: Executor, slug: string): Promise<OrganizationRow | undefined> {
  return orgs(db).selectFrom('organizations').selectAll().where('slug', '=', slug).executeTakeFirst();
}

/** The organisation, locked for the rest of the transaction: changes to its members wait for each other. */
export function lockOrganization(db: Executor, id: number): Promise<OrganizationRow | undefined> {
  return orgs(db).selectFrom('organizations').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

/** The changed organisation; throws the unique violation when the new slug is taken. */
export function updateOrganization(
  db: Executor,
  id: number,
  values: { slug?: string; name?: string },
): Promise<OrganizationRow | undefined> {
  return orgs(db)
    .updateTable('organizations')
    .set({ ...values, updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** Deletes the organisation; its memberships go with it, and sessions acting for it forget it. */
export function deleteOrganization(db: Executor, id: number): Promise<OrganizationRow | undefined> {
  return orgs(db).deleteFrom('organizations').where('id', '=', id).returningAll().executeTakeFirst();
}

export interface OrganizationFilter {
  /** A case-insensitive substring of the name or the slug. */
  q?: string;
}

function filteredOrganizations(db: Executor, filter: OrganizationFilter) {
  let query = orgs(db).selectFrom('organizations');
  if (filter.q) {
    const pattern = containing(filter.q);
    query = query.where((eb) => eb.or([eb('slug', 'like', pattern), eb(eb.fn('lower', ['name']), 'like', pattern)]));
  }
  return query;
}

/** One page of organisations by id, and how many match. */
export async function listOrganizationsPage(
  db: Executor,
  filter: OrganizationFilter,
  limit: number,
  offset: number,
): Promise<{ rows: OrganizationRow[]; total: number }> {
  const [rows, count] = await Promise.all([
    filteredOrganizations(db, filter).selectAll().orderBy('id').limit(limit).offset(offset).execute(),
    filteredOrganizations(db, filter)
      .select(sql<number>`count(*)::int`.as('total'))
      .executeTakeFirstOrThrow(),
  ]);
  return { rows, total: count.total };
}

/** Up to `limit` organisations with an id above `after`, by id. */
export function listOrganizationsAfter(db: Executor, filter: OrganizationFilter, after: number, limit: number): Promise<OrganizationRow[]> {
  return filteredOrganizations(db, filter).selectAll().where('id', '>', after).orderBy('id').limit(limit).execute();
}

// Members

/** Adds a member; undefined when they already are one. */
export async function insertMember(db: Executor, member: { organizationId: number; userId: number; role: string }): Promise<boolean> {
  const row = await orgs(db)
    .insertInto('organization_members')
    .values({ organization_id: member.organizationId, user_id: member.userId, role: member.role })
    .onConflict((oc) => oc.columns(['organization_id', 'user_id']).doNothing())
    .returning('user_id')
    .executeTakeFirst();
  return row !== undefined;
}

/** The user's role in the organisation and its permissions; undefined for a non-member. */
export function findMembership(db: Executor, organizationId: number, userId: number): Promise<Membership | undefined> {
  return orgs(db)
    .selectFrom('organization_members')
    .innerJoin('organization_roles', 'organization_roles.key', 'organization_members.role')
    .select(['organization_members.role', 'organization_roles.permissions'])
    .where('organization_members.organization_id', '=', organizationId)
    .where('organization_members.user_id', '=', userId)
    .executeTakeFirst();
}

/** The user's membership and whether the organisation requires a second factor, in one read; undefined for a non-member. */
export async function findSignInMembership(db: Executor, organizationId: number, userId: number): Promise<SignInMembership | undefined> {
  const row = await db
    .withTables<OrganizationTables & { organization_sign_in: { organization_id: number; mfa_required: boolean } }>()
    .selectFrom('organization_members')
    .innerJoin('organization_roles', 'organization_roles.key', 'organization_members.role')
    .leftJoin('organization_sign_in', 'organization_sign_in.organization_id', 'organization_members.organization_id')
    .select(['organization_members.role', 'organization_roles.permissions', 'organization_sign_in.mfa_required'])
    .where('organization_members.organization_id', '=', organizationId)
    .where('organization_members.user_id', '=', userId)
    .executeTakeFirst();
  return row && { role: row.role, permissions: row.permissions, mfa_required: row.mfa_required ?? false };
}

/** Every organisation the user belongs to, with their role and its permissions, by organisation id. */
export function listUserMemberships(db: Executor, userId: number): Promise<Array<OrganizationRow & Membership>> {
  return orgs(db)
    .selectFrom('organization_members')
    .innerJoin('organizations', 'organizations.id', 'organization_members.organization_id')
    .innerJoin('organization_roles', 'organization_roles.key', 'organization_members.role')
    .select([
      'organizations.id',
      'organizations.slug',
      'organizations.name',
      'organizations.created_at',
      'organizations.updated_at',
      'organization_members.role',
      'organization_roles.permissions',
    ])
    .where('organization_members.user_id', '=', userId)
    .orderBy('organizations.id')
    .execute();
}

/** One page of the organisation's members whose account is not deleted, by when they joined, and how many there are. */
export async function listMembersPage(
  db: Executor,
  organizationId: number,
  limit: number,
  offset: number,
): Promise<{ rows: MemberRow[]; total: number }> {
  const members = () =>
    orgs(db)
      .selectFrom('organization_members')
      .innerJoin('users', 'users.id', 'organization_members.user_id')
      .where('organization_members.organization_id', '=', organizationId)
      .where('users.deleted_at', 'is', null);
  const [rows, count] = await Promise.all([
    members()
      .select(['organization_members.user_id', 'users.email', 'users.name', 'organization_members.role', 'organization_members.joined_at'])
      .orderBy('organization_members.joined_at')
      .orderBy('organization_members.user_id')
      .limit(limit)
      .offset(offset)
      .execute(),
    // Kept by triggers (migrations/20261208120000_organization_member_counts.ts): no count(*) of a large organisation.
    orgs(db)
      .selectFrom('organization_member_counts')
      .select(sql<string>`n`.as('total'))
      .where('organization_id', '=', organizationId)
      .executeTakeFirst(),
  ]);
  return { rows, total: Number(count?.total ?? 0) };
}

/** One member as the member list shows them. */
export function findMember(db: Executor, organizationId: number, userId: number): Promise<MemberRow | undefined> {
  return orgs(db)
    .selectFrom('organization_members')
    .innerJoin('users', 'users.id', 'organization_members.user_id')
    .select(['organization_members.user_id', 'users.email', 'users.name', 'organization_members.role', 'organization_members.joined_at'])
    .where('organization_members.organization_id', '=', organizationId)
    .where('organization_members.user_id', '=', userId)
    .executeTakeFirst();
}

export async function updateMemberRole(db: Executor, organizationId: number, userId: number, role: string): Promise<boolean> {
  const row = await orgs(db)
    .updateTable('organization_members')
    .set({ role })
    .where('organization_id', '=', organizationId)
    .where('user_id', '=', userId)
    .returning('user_id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function deleteMember(db: Executor, organizationId: number, userId: number): Promise<boolean> {
  const row = await orgs(db)
    .deleteFrom('organization_members')
    .where('organization_id', '=', organizationId)
    .where('user_id', '=', userId)
    .returning('user_id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Owners of the organisation whose account is not deleted. */
export async function countOwners(db: Executor, organizationId: number): Promise<number> {
  const row = await orgs(db)
    .selectFrom('organization_members')
    .innerJoin('users', 'users.id', 'organization_members.user_id')
    .select(sql<number>`count(*)::int`.as('n'))
    .where('organization_members.organization_id', '=', organizationId)
    .where('organization_members.role', '=', 'owner')
    .where('users.deleted_at', 'is', null)
    .executeTakeFirstOrThrow();
  return row.n;
}

// Roles

/** Every role, the built-in ones first, then by key. */
export function listRoles(db: Executor): Promise<OrganizationRoleRow[]> {
  return orgs(db).selectFrom('organization_roles').selectAll().orderBy('built_in', 'desc').orderBy('key').execute();
}

/** The role; `lock` holds it for the rest of the transaction, so that it is not deleted while being given. */
export function findRole(db: Executor, key: string, lock: 'share' | 'update' | 'none' = 'none'): Promise<OrganizationRoleRow | undefined> {
  const query = orgs(db).selectFrom('organization_roles').selectAll().where('key', '=', key);
  if (lock === 'share') return query.forShare().executeTakeFirst();
  if (lock === 'update') return query.forUpdate().executeTakeFirst();
  return query.executeTakeFirst();
}

/** The new role, or undefined when its key is taken. */
export function insertRole(
  db: Executor,
  role: { key: string; name: string; permissions: string[] },
): Promise<OrganizationRoleRow | undefined> {
  return orgs(db)
    .insertInto('organization_roles')
    .values(role)
    .onConflict((oc) => oc.column('key').doNothing())
    .returningAll()
    .executeTakeFirst();
}

export function updateRole(
  db: Executor,
  key: string,
  values: { name: string; permissions: string[] },
): Promise<OrganizationRoleRow | undefined> {
  return orgs(db)
    .updateTable('organization_roles')
    .set({ ...values, updated_at: sql<Date>`now()` })
    .where('key', '=', key)
    .where('built_in', '=', false)
    .returningAll()
    .executeTakeFirst();
}

export async function deleteRole(db: Executor, key: string): Promise<void> {
  await orgs(db).deleteFrom('organization_roles').where('key', '=', key).where('built_in', '=', false).execute();
}

/** Whether any member of any organisation holds the role. */
export async function roleIsHeld(db: Executor, key: string): Promise<boolean> {
  const row = await orgs(db).selectFrom('organization_members').select('user_id').where('role', '=', key).limit(1).executeTakeFirst();
  return row !== undefined;
}
