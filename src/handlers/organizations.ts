import { created, noContent, ok, signedIn } from './reply.js';
import type { Handler } from './types.js';
import { organizationMemberView, organizationRoleView, organizationView } from './views.js';

export const createOrganization: Handler<'createOrganization'> = async (input, { organizations }) =>
  created(organizationView(await organizations.create(signedIn(input), input.body)));

export const listOrganizations: Handler<'listOrganizations'> = async (input, { organizations }) => {
  const { rows, meta } = await organizations.list(signedIn(input), input.query);
  return ok(rows.map(organizationView), { meta });
};

export const listMyOrganizations: Handler<'listMyOrganizations'> = async (input, { organizations }) => {
  const memberships = await organizations.mine(signedIn(input));
  return ok(
    memberships.map(({ organization, role, permissions }) => ({ organization: organizationView(organization), role, permissions })),
  );
};

export const getOrganization: Handler<'getOrganization'> = async (input, { organizations }) =>
  ok(organizationView(await organizations.get(signedIn(input), input.path.id)));

export const updateOrganization: Handler<'updateOrganization'> = async (input, { organizations }) =>
  ok(organizationView(await organizations.update(signedIn(input), input.path.id, input.body)));

export const deleteOrganization: Handler<'deleteOrganization'> = async (input, { organizations }) => {
  await organizations.remove(signedIn(input), input.path.id);
  return noContent();
};

export const listOrganizationMembers: Handler<'listOrganizationMembers'> = async (input, { organizations }) => {
  const { rows, meta } = await organizations.members(signedIn(input), input.path.id, input.query);
  return ok(rows.map(organizationMemberView), { meta });
};

export const updateOrganizationMember: Handler<'updateOrganizationMember'> = async (input, { organizations }) =>
  ok(organizationMemberView(await organizations.setRole(signedIn(input), input.path.id, input.path.user_id, input.body.role)));

export const removeOrganizationMember: Handler<'removeOrganizationMember'> = async (input, { organizations }) => {
  await organizations.removeMember(signedIn(input), input.path.id, input.path.user_id);
  return noContent();
};

export const listOrganizationRoles: Handler<'listOrganizationRoles'> = async (input, { organizationRoles }) =>
  ok((await organizationRoles.list(signedIn(input))).map(organizationRoleView));

export const createOrganizationRole: Handler<'createOrganizationRole'> = async (input, { organizationRoles }) =>
  created(organizationRoleView(await organizationRoles.create(signedIn(input), input.body)));

export const updateOrganizationRole: Handler<'updateOrganizationRole'> = async (input, { organizationRoles }) =>
  ok(organizationRoleView(await organizationRoles.update(signedIn(input), input.path.key, input.body)));

export const deleteOrganizationRole: Handler<'deleteOrganizationRole'> = async (input, { organizationRoles }) => {
  await organizationRoles.remove(signedIn(input), input.path.key);
  return noContent();
};
