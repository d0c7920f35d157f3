import type { Core } from '../wiring/core.js';
import { OrganizationRoles } from './organization-roles.js';
import { Organizations } from './organizations.js';

/** Organisations, their members and the roles they share. */
export function organizationsRoom(core: Pick<Core, 'config' | 'db' | 'transact'>) {
  const { config, db, transact } = core;
  return {
    organizations: new Organizations(db, transact, config.organizations, config.pagination),
    organizationRoles: new OrganizationRoles(db, transact),
  };
}
