import { randomBytes } from 'node:crypto';
import type { components } from '../../generated/openapi.js';
import type { Kysely } from 'kysely';
import { recordEvent, type RequestOrigin } from '../audit/audit-events.js';
import type { OrganizationConfig, PaginationConfig } from '../config/index.js';
import { isUniqueViolation } from '../db/errors.js';
import type { Transact } from '../db/transaction.js';
import type { Database, Executor } from '../db/types.js';
import { Conflict, Forbidden, NotFound, Validation } from '../errors.js';
import { isAdmin, requireAdmin, type Principal } from '../principal.js';
import type { OrganizationClaims } from '../sessions/tokens.js';
import * as repo from './organization-repository.js';
import type { MemberRow, Membership, OrganizationRow } from './organization-repository.js';

/** What the built-in roles grant, and what a custom role may grant besides the deployment's own strings. */
export const ORGANIZATION_PERMISSIONS = [
  'org:read',
  'org:update',
  'org:delete',
  'members:read',
  'members:invite',
  'members:update',
  'members:remove',
] as const;

export type OrganizationPermission = (typeof ORGANIZATION_PERMISSIONS)[number];

export const OWNER = 'owner';
const SLUG = /^[a-z0-9-]{2,48}$/;
const ALL_DIGITS = /^\d+$/;
/** The largest id an organisation may have (a PostgreSQL integer). */
const MAX_ID = 2_147_483_647;

export interface PageInput {
  page?: number;
  per_page?: number;
  cursor?: number;
  limit?: number;
}

export type PageMeta = components['schemas']['PageMeta'];

export type OrganizationList =
  | { shape: 'page'; rows: OrganizationRow[]; meta: PageMeta }
  | { shape: 'cursor'; rows: OrganizationRow[]; meta: { next_cursor: number | null; has_more: boolean } };

/** Who acts on an organisation: a signed-in caller, or an operator at the command line. */
type Actor = { id: number | null; origin: RequestOrigin };

const actorOf = (principal: Principal): Actor => ({ id: principal.user.id, origin: principal.client });

const organizationNotFound = () => new NotFound('Organization not found');

/**
 * Organisations: the deployment's customers, each a set of members with roles that every
 * organisation shares (owner, admin, member, and the deployment's own). Every answer is decided from
 * the memberships stored here, never from a claim the caller sent: a non-member is told the
 * organisation does not exist, a member without the permission is refused, and a deployment admin
 * may do everything. Only an owner makes or unmakes an owner, and an organisation always keeps one.
 */
export class Organizations {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly transact: Transact,
    private readonly config: OrganizationConfig,
    private readonly pagination: PaginationConfig,
  ) {}

  async create(principal: Principal, input: { name: string; slug?: string }): Promise<OrganizationRow> {
    if (this.config.creation === 'admin') requireAdmin(principal);
    else if (!isAdmin(principal) && !principal.user.email_verified) {
      throw new Forbidden('Verify your e-mail address before creating an organization');
    }
    return this.createWithOwner(principal.user.id, input, actorOf(principal));
  }

  /** An operator's: creates the organisation with the user as its owner. */
  createForOwner(ownerId: number, input: { name: string; slug: string }): Promise<OrganizationRow> {
    return this.createWithOwner(ownerId, input, { id: null, origin: null });
  }

  private async createWithOwner(ownerId: number, input: { name: string; slug?: string }, actor: Actor): Promise<OrganizationRow> {
    const name = checkedName(input.name);
    const given = input.slug === undefined ? undefined : checkedSlug(input.slug);
    return this.transact(async (trx) => {
      let organization = await repo.insertOrganization(trx, { slug: given ?? slugOf(name), name });
      // A slug made from the name that is taken gets a random tail; one the caller chose is theirs to change.
      if (!organization && given === undefined) {
        organization = await repo.insertOrganization(trx, { slug: `${slugOf(name).slice(0, 41)}-${randomBytes(3).toString('hex')}`, name });
      }
      if (!organization) throw new Conflict('An organization with this slug already exists');
      await repo.insertMember(trx, { organizationId: organization.id, userId: ownerId, role: OWNER });
      await recordEvent(trx, {
        type: 'organization.created',
        actor: actor.id,
        subject: null,
        details: about(organization),
        origin: actor.origin,
      });
      await recordEvent(trx, {
        type: 'organization.member_added',
        actor: actor.id,
        subject: ownerId,
        details: { ...about(organization), role: OWNER },
        origin: actor.origin,
      });
      return organization;
    });
  }

  async list(principal: Principal, input: PageInput & { q?: string }): Promise<OrganizationList> {
    requireAdmin(principal);
    const filter = { q: input.q };
    if (cursorShape(input)) {
      const limit = input.limit ?? this.pagination.defaultPageSize;
      const rows = await repo.listOrganizationsAfter(this.db, filter, input.cursor ?? 0, limit + 1);
      const has_more = rows.length > limit;
      const page = has_more ? rows.slice(0, limit) : rows;
      return { shape: 'cursor', rows: page, meta: { next_cursor: has_more ? page[page.length - 1].id : null, has_more } };
    }
    const { page, perPage, offset } = this.pageOf(input);
    const { rows, total } = await repo.listOrganizationsPage(this.db, filter, perPage, offset);
    return { shape: 'page', rows, meta: pageMeta(page, perPage, total) };
  }

  /** The caller's organisations, with their role in each and what it allows. */
  async mine(principal: Principal): Promise<Array<{ organization: OrganizationRow; role: string; permissions: string[] }>> {
    const rows = await repo.listUserMemberships(this.db, principal.user.id);
    return rows.map(({ role, permissions, ...organization }) => ({ organization, role, permissions }));
  }

  async get(principal: Principal, id: number): Promise<OrganizationRow> {
    return (await this.access(this.db, principal, id, 'org:read')).organization;
  }

  async update(principal: Principal, id: number, input: { name?: string; slug?: string }): Promise<OrganizationRow> {
    const changes = {
      ...(input.name === undefined ? {} : { name: checkedName(input.name) }),
      ...(input.slug === undefined ? {} : { slug: checkedSlug(input.slug) }),
    };
    try {
      return await this.transact(async (trx) => {
        await this.access(trx, principal, id, 'org:update', true);
        const updated = await repo.updateOrganization(trx, id, changes);
        if (!updated) throw organizationNotFound();
        await recordEvent(trx, {
          type: 'organization.updated',
          actor: principal.user.id,
          subject: null,
          details: { ...about(updated), fields: Object.keys(changes) },
          origin: principal.client,
        });
        return updated;
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw new Conflict('An organization with this slug already exists');
      throw error;
    }
  }

  async remove(principal: Principal, id: number): Promise<void> {
    await this.transact(async (trx) => {
      await this.access(trx, principal, id, 'org:delete', true);
      const deleted = await repo.deleteOrganization(trx, id);
      if (!deleted) throw organizationNotFound();
      await recordEvent(trx, {
        type: 'organization.deleted',
        actor: principal.user.id,
        subject: null,
        details: about(deleted),
        origin: principal.client,
      });
    });
  }

  async members(
    principal: Principal,
    id: number,
    input: Pick<PageInput, 'page' | 'per_page'>,
  ): Promise<{ rows: MemberRow[]; meta: PageMeta }> {
    await this.access(this.db, principal, id, 'members:read');
    const { page, perPage, offset } = this.pageOf(input);
    const { rows, total } = await repo.listMembersPage(this.db, id, perPage, offset);
    return { rows, meta: pageMeta(page, perPage, total) };
  }

  /** Gives a member another role; only an owner gives or takes away `owner`, and the last owner keeps it. */
  async setRole(principal: Principal, id: number, userId: number, role: string): Promise<MemberRow> {
    await this.transact(async (trx) => {
      const { organization, caller } = await this.access(trx, principal, id, 'members:update', true);
      const member = await repo.findMembership(trx, id, userId);
      if (!member) throw new NotFound('Member not found');
      if (!(await repo.findRole(trx, role, 'share'))) {
        throw new Validation([{ field: 'body.role', message: `no role has the key "${role}": see GET /api/organization-roles` }]);
      }
      if (member.role === role) return;
      if ((role === OWNER || member.role === OWNER) && !isAdmin(principal) && caller?.role !== OWNER) {
        throw new Forbidden('Only an owner may make or unmake an owner');
      }
      if (member.role === OWNER) await keepAnOwner(trx, id, 'demoted');
      await repo.updateMemberRole(trx, id, userId, role);
      await recordEvent(trx, {
        type: 'organization.role_changed',
        actor: principal.user.id,
        subject: userId,
        details: { ...about(organization), role, previous_role: member.role },
        origin: principal.client,
      });
    });
    return this.member(id, userId);
  }

  /** Removes a member, or lets a member leave; the last owner stays. */
  async removeMember(principal: Principal, id: number, userId: number): Promise<void> {
    await this.transact(async (trx) => {
      const leaving = principal.user.id === userId;
      const { organization, caller } = leaving
        ? await this.access(trx, principal, id, 'org:read', true, true)
        : await this.access(trx, principal, id, 'members:remove', true);
      const member = leaving ? caller : await repo.findMembership(trx, id, userId);
      if (!member) throw new NotFound('Member not found');
      if (member.role === OWNER && !leaving && !isAdmin(principal) && caller?.role !== OWNER) {
        throw new Forbidden('Only an owner may remove an owner');
      }
      if (member.role === OWNER) await keepAnOwner(trx, id, leaving ? 'leave' : 'removed');
      await repo.deleteMember(trx, id, userId);
      await recordEvent(trx, {
        type: 'organization.member_removed',
        actor: principal.user.id,
        subject: userId,
        details: { ...about(organization), role: member.role, left: leaving },
        origin: principal.client,
      });
    });
  }

  /** An operator's: adds the user with the role, or gives a member that role. */
  async addMember(slug: string, userId: number, role: string): Promise<'added' | 'changed' | 'unchanged'> {
    return this.transact(async (trx) => {
      const organization = await operatorTarget(trx, slug, role);
      const member = await repo.findMembership(trx, organization.id, userId);
      if (member?.role === role) return 'unchanged';
      if (member) {
        if (member.role === OWNER) await keepAnOwner(trx, organization.id, 'demoted');
        await repo.updateMemberRole(trx, organization.id, userId, role);
        await recordEvent(trx, {
          type: 'organization.role_changed',
          actor: null,
          subject: userId,
          details: { ...about(organization), role, previous_role: member.role },
          origin: null,
        });
        return 'changed';
      }
      await repo.insertMember(trx, { organizationId: organization.id, userId, role });
      await recordEvent(trx, {
        type: 'organization.member_added',
        actor: null,
        subject: userId,
        details: { ...about(organization), role },
        origin: null,
      });
      return 'added';
    });
  }

  /**
   * The claims of an access token acting for the organisation, when the user is a member of it: read
   * from the membership as it is now.
   */
  /** The claims of a sign-in for the organisation, and whether it requires a second factor; undefined for a non-member. */
  async signInMembership(
    db: Executor,
    userId: number,
    organizationId: number,
  ): Promise<{ claims: OrganizationClaims; mfaRequired: boolean } | undefined> {
    const membership = await repo.findSignInMembership(db, organizationId, userId);
    return (
      membership && {
        claims: { org_id: organizationId, org_role: membership.role, org_permissions: membership.permissions },
        mfaRequired: membership.mfa_required,
      }
    );
  }

  async claims(db: Executor, userId: number, organizationId: number): Promise<OrganizationClaims | undefined> {
    const membership = await repo.findMembership(db, organizationId, userId);
    return membership && { org_id: organizationId, org_role: membership.role, org_permissions: membership.permissions };
  }

  /** The id of the organisation an id or a slug names; slugs are never digits alone, so the two never meet. */
  async idOf(idOrSlug: string): Promise<number | undefined> {
    if (ALL_DIGITS.test(idOrSlug)) {
      const id = Number(idOrSlug);
      return id <= MAX_ID ? (await repo.findOrganization(this.db, id))?.id : undefined;
    }
    const found = await repo.findOrganizationBySlug(this.db, idOrSlug);
    return found?.id;
  }

  /** The user's organisations and their role in each, as the OpenID Connect claim `organizations` says them. */
  async membershipsOf(userId: number): Promise<Array<{ id: number; slug: string; name: string; role: string }>> {
    const rows = await repo.listUserMemberships(this.db, userId);
    return rows.map(({ id, slug, name, role }) => ({ id, slug, name, role }));
  }

  private async member(id: number, userId: number): Promise<MemberRow> {
    const found = await repo.findMember(this.db, id, userId);
    if (!found) throw new NotFound('Member not found');
    return found;
  }

  /**
   * The organisation, when the caller may act on it with `permission`: a deployment admin always, a
   * member whose role grants it; a non-member is told it does not exist. `lock` holds the
   * organisation for the rest of the transaction; `anyMember` lets every member through. The
   * organisation's other services (domains, sign-in policy) ask it too.
   */
  async access(
    db: Executor,
    principal: Principal,
    id: number,
    permission: OrganizationPermission,
    lock = false,
    anyMember = false,
  ): Promise<{ organization: OrganizationRow; caller: Membership | undefined }> {
    const organization = lock ? await repo.lockOrganization(db, id) : await repo.findOrganization(db, id);
    if (!organization) throw organizationNotFound();
    const caller = await repo.findMembership(db, id, principal.user.id);
    if (isAdmin(principal)) return { organization, caller };
    if (!caller) throw organizationNotFound();
    if (!anyMember && !caller.permissions.includes(permission)) {
      throw new Forbidden(`Your role in this organization does not grant ${permission}`);
    }
    return { organization, caller };
  }

  private pageOf(input: Pick<PageInput, 'page' | 'per_page'>) {
    const page = input.page ?? 1;
    const perPage = input.per_page ?? this.pagination.defaultPageSize;
    return { page, perPage, offset: (page - 1) * perPage };
  }
}

/** Refuses to leave the organisation without an owner whose account is live. */
/**
 * What an operator's change (the command line) names: the organisation with this slug, locked for the
 * rest of the transaction, once the role exists too.
 */
export async function operatorTarget(trx: Executor, slug: string, role: string): Promise<OrganizationRow> {
  const found = await repo.findOrganizationBySlug(trx, slug);
  const organization = found && (await repo.lockOrganization(trx, found.id));
  if (!organization) throw new NotFound(`no organization has the slug "${slug}"`);
  if (!(await repo.findRole(trx, role, 'share'))) throw new NotFound(`no role has the key "${role}"`);
  return organization;
}

async function keepAnOwner(db: Executor, organizationId: number, how: 'leave' | 'removed' | 'demoted'): Promise<void> {
  if ((await repo.countOwners(db, organizationId)) > 1) return;
  const what = { leave: 'cannot leave', removed: 'cannot be removed', demoted: 'cannot be demoted' }[how];
  throw new Conflict(`The last owner of an organization ${what}: make another member an owner first, or delete the organization`);
}

/** What every event of an organisation says of it. */
function about(organization: OrganizationRow) {
  return { organization_id: organization.id, slug: organization.slug, name: organization.name };
}

function cursorShape(input: PageInput): boolean {
  const pageShape = input.page !== undefined || input.per_page !== undefined;
  const cursor = input.cursor !== undefined || input.limit !== undefined;
  if (pageShape && cursor) {
    const mixed = (['page', 'per_page', 'cursor', 'limit'] as const)
      .filter((name) => input[name] !== undefined)
      .map((name) => ({ field: `query.${name}`, message: 'page/per_page and cursor/limit cannot be combined' }));
    throw new Validation(mixed);
  }
  return cursor;
}

function pageMeta(page: number, perPage: number, total: number): PageMeta {
  const pages = Math.ceil(total / perPage);
  return { page, per_page: perPage, total, pages, has_next: page < pages, has_prev: page > 1 };
}

function checkedName(name: string): string {
  const trimmed = name.trim();
  if (trimmed === '') throw new Validation([{ field: 'body.name', message: 'must not be blank' }]);
  return trimmed;
}

/** Slugs are 2 to 48 of `a-z`, `0-9` and `-`, never digits alone: an organisation's id and its slug never look alike. */
export function checkedSlug(slug: string, field = 'body.slug'): string {
  if (!SLUG.test(slug)) throw new Validation([{ field, message: 'must be 2 to 48 lower-case letters, digits and hyphens' }]);
  if (ALL_DIGITS.test(slug)) throw new Validation([{ field, message: 'must not be digits alone: it would read as an id' }]);
  return slug;
}

/** A slug made from a name: its letters and digits, lower-cased, hyphens between words. */
function slugOf(name: string): string {
  const base = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48)
    .replace(/-+$/, '');
  return base.length >= 2 && !ALL_DIGITS.test(base) ? base : `org-${base}`.slice(0, 48).replace(/-+$/, '');
}
