import { accepted, created, noContent, ok, signedIn } from './reply.js';
import type { Handler } from './types.js';
import { organizationInvitationView, organizationView } from './views.js';

export const createOrganizationInvitation: Handler<'createOrganizationInvitation'> = async (input, { organizationInvitations }) =>
  created(organizationInvitationView(await organizationInvitations.create(signedIn(input), input.path.id, input.body)));

export const listOrganizationInvitations: Handler<'listOrganizationInvitations'> = async (input, { organizationInvitations }) =>
  ok((await organizationInvitations.list(signedIn(input), input.path.id)).map(organizationInvitationView));

export const resendOrganizationInvitation: Handler<'resendOrganizationInvitation'> = async (input, { organizationInvitations }) =>
  accepted(organizationInvitationView(await organizationInvitations.resend(signedIn(input), input.path.id, input.path.invitation_id)));

export const revokeOrganizationInvitation: Handler<'revokeOrganizationInvitation'> = async (input, { organizationInvitations }) => {
  await organizationInvitations.revoke(signedIn(input), input.path.id, input.path.invitation_id);
  return noContent();
};

export const listMyInvitations: Handler<'listMyInvitations'> = async (input, { organizationInvitations }) =>
  ok((await organizationInvitations.mine(signedIn(input))).map(organizationInvitationView));

export const acceptInvitation: Handler<'acceptInvitation'> = async (input, { organizationInvitations }) => {
  const { organization, role, permissions } = await organizationInvitations.accept(signedIn(input), input.path.invitation_id);
  return ok({ organization: organizationView(organization), role, permissions });
};

export const declineInvitation: Handler<'declineInvitation'> = async (input, { organizationInvitations }) => {
  await organizationInvitations.decline(signedIn(input), input.path.invitation_id);
  return noContent();
};
