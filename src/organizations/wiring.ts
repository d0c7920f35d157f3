import type { Core } from '../wiring/core.js';
import { txtLookup } from './dns-lookup.js';
import { OrganizationDomains } from './domains.js';
import { OrganizationInvitations } from './invitations.js';
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

/** Invitations to join an organisation, mailed to an address and accepted by its verified holder. */
export function invitationsRoom(
  core: Pick<Core, 'config' | 'db' | 'transact' | 'outbox' | 'now'>,
  needs: { organizations: Organizations },
) {
  const { config, db, transact, outbox, now } = core;
  const organizationInvitations = new OrganizationInvitations(db, transact, outbox, needs.organizations, config, now);
  return { organizationInvitations };
}
