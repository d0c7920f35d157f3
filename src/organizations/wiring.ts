import type { Core } from '../wiring/core.js';
import { OrganizationInvitations } from './invitations.js';
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

/** Invitations to join an organisation, mailed to an address and accepted by its verified holder. */
export function invitationsRoom(
  core: Pick<Core, 'config' | 'db' | 'transact' | 'outbox' | 'now'>,
  needs: { organizations: Organizations },
) {
  const { config, db, transact, outbox, now } = core;
  const organizationInvitations = new OrganizationInvitations(db, transact, outbox, needs.organizations, config, now);
  return { organizationInvitations };
}
