import type { Core } from '../wiring/core.js';
import { txtLookup } from './dns-lookup.js';
import { OrganizationDomains } from './domains.js';
import { OrganizationRoles } from './organization-roles.js';
import { Organizations } from './organizations.js';
import { OrganizationSignIn } from './sign-in-policy.js';

/** Organisations, their members and the roles they share, their domains and sign-in policies. */
export function organizationsRoom(core: Pick<Core, 'config' | 'db' | 'transact'>) {
  const { config, db, transact } = core;
  const organizations = new Organizations(db, transact, config.organizations, config.pagination);
  return {
    organizations,
    organizationRoles: new OrganizationRoles(db, transact),
    organizationDomains: new OrganizationDomains(db, transact, organizations, txtLookup(config.organizations.dnsServers)),
    organizationSignIn: new OrganizationSignIn(db, transact, organizations),
  };
}
