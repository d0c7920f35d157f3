import { created, noContent, ok, signedIn } from './reply.js';
import type { Handler } from './types.js';
import { organizationDomainView } from './views.js';

export const listOrganizationDomains: Handler<'listOrganizationDomains'> = async (input, { organizationDomains }) =>
  ok((await organizationDomains.list(signedIn(input), input.path.id)).map(organizationDomainView));

export const addOrganizationDomain: Handler<'addOrganizationDomain'> = async (input, { organizationDomains }) =>
  created(organizationDomainView(await organizationDomains.add(signedIn(input), input.path.id, input.body.domain)));

export const verifyOrganizationDomain: Handler<'verifyOrganizationDomain'> = async (input, { organizationDomains }) =>
  ok(organizationDomainView(await organizationDomains.verify(signedIn(input), input.path.id, input.path.domain)));

export const deleteOrganizationDomain: Handler<'deleteOrganizationDomain'> = async (input, { organizationDomains }) => {
  await organizationDomains.remove(signedIn(input), input.path.id, input.path.domain);
  return noContent();
};

export const getOrganizationSignIn: Handler<'getOrganizationSignIn'> = async (input, { organizationSignIn }) =>
  ok(await organizationSignIn.get(signedIn(input), input.path.id));

export const updateOrganizationSignIn: Handler<'updateOrganizationSignIn'> = async (input, { organizationSignIn }) =>
  ok(await organizationSignIn.update(signedIn(input), input.path.id, input.body));

export const findSingleSignOn: Handler<'findSingleSignOn'> = async (input, { organizationSignIn }) =>
  ok(await organizationSignIn.singleSignOn(input.query.email));
