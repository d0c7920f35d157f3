import type { Kysely } from 'kysely';
import { recordEvent } from '../audit/audit-events.js';
import type { Transact } from '../db/transaction.js';
import type { Database } from '../db/types.js';
import { Conflict, NotFound } from '../errors.js';
import { requireAdmin, type Principal } from '../principal.js';
import * as repo from './organization-repository.js';
import type { OrganizationRoleRow } from './organization-repository.js';

export interface RoleInput {
  name: string;
  permissions: string[];
}

/**
 * The roles every organisation shares, for admins: `owner`, `admin` and `member` are built in and
 * stay as they are; the deployment adds its own, with its own permission strings beside the
 * organisation ones. A role still held by a member cannot be deleted.
 */
export class OrganizationRoles {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly transact: Transact,
  ) {}

  list(principal: Principal): Promise<OrganizationRoleRow[]> {
    requireAdmin(principal);
    return repo.listRoles(this.db);
  }

  async create(principal: Principal, input: RoleInput & { key: string }): Promise<OrganizationRoleRow> {
    requireAdmin(principal);
    return this.transact(async (trx) => {
      const role = await repo.insertRole(trx, { key: input.key, name: input.name.trim(), permissions: unique(input.permissions) });
      if (!role) throw new Conflict('A role with this key already exists');
      await recordEvent(trx, {
        type: 'organization_role.created',
        actor: principal.user.id,
        subject: null,
        details: about(role),
        origin: principal.client,
      });
      return role;
    });
  }

  async update(principal: Principal, key: string, input: RoleInput): Promise<OrganizationRoleRow> {
    requireAdmin(principal);
    return this.transact(async (trx) => {
      await this.custom(trx, key);
      const role = await repo.updateRole(trx, key, { name: input.name.trim(), permissions: unique(input.permissions) });
      if (!role) throw new NotFound('Role not found');
      await recordEvent(trx, {
        type: 'organization_role.updated',
        actor: principal.user.id,
        subject: null,
        details: about(role),
        origin: principal.client,
      });
      return role;
    });
  }

  async remove(principal: Principal, key: string): Promise<void> {
    requireAdmin(principal);
    await this.transact(async (trx) => {
      const role = await this.custom(trx, key);
      if (await repo.roleIsHeld(trx, key)) throw new Conflict('Members still hold this role: give them another one first');
      await repo.deleteRole(trx, key);
      await recordEvent(trx, {
        type: 'organization_role.deleted',
        actor: principal.user.id,
        subject: null,
        details: about(role),
        origin: principal.client,
      });
    });
  }

  /** The custom role, locked against its being given while it changes; built-in roles are refused. */
  private async custom(db: Parameters<typeof repo.findRole>[0], key: string): Promise<OrganizationRoleRow> {
    const role = await repo.findRole(db, key, 'update');
    if (!role) throw new NotFound('Role not found');
    if (role.built_in) throw new Conflict(`"${key}" is a built-in role: it cannot be changed or deleted`);
    return role;
  }
}

const unique = (permissions: string[]) => [...new Set(permissions)];

const about = (role: OrganizationRoleRow) => ({ key: role.key, permissions: role.permissions });
