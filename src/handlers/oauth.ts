import { NotFound } from '../errors.js';
import type { ClientView } from '../oidc/clients.js';
import { iso } from '../users/user-view.js';
import { created, noContent, ok, signedIn } from './reply.js';
import type { Handler } from './types.js';

function clientView<T extends ClientView>(client: T) {
  return { ...client, created_at: iso(client.created_at), updated_at: iso(client.updated_at) };
}

export const listOauthClients: Handler<'listOauthClients'> = async (input, { oauthClients }) =>
  ok((await oauthClients.list(signedIn(input))).map(clientView));

export const createOauthClient: Handler<'createOauthClient'> = async (input, { oauthClients }) =>
  created(clientView(await oauthClients.create(signedIn(input), input.body)));

export const getOauthClient: Handler<'getOauthClient'> = async (input, { oauthClients }) =>
  ok(clientView(await oauthClients.get(signedIn(input), input.path.client_id)));

export const updateOauthClient: Handler<'updateOauthClient'> = async (input, { oauthClients }) =>
  ok(clientView(await oauthClients.update(signedIn(input), input.path.client_id, input.body)));

export const deleteOauthClient: Handler<'deleteOauthClient'> = async (input, { oauthClients }) => {
  await oauthClients.remove(signedIn(input), input.path.client_id);
  return noContent();
};

export const rotateOauthClientSecret: Handler<'rotateOauthClientSecret'> = async (input, { oauthClients }) =>
  ok(await oauthClients.rotateSecret(signedIn(input), input.path.client_id));

export const listOauthGrants: Handler<'listOauthGrants'> = async (input, { oauthGrants }) =>
  ok((await oauthGrants.list(signedIn(input))).map((grant) => ({ ...grant, created_at: iso(grant.created_at) })));

export const revokeOauthGrant: Handler<'revokeOauthGrant'> = async (input, { oauthGrants }) => {
  await oauthGrants.revoke(signedIn(input), input.path.id);
  return noContent();
};

/**
 * The OpenID Connect provider's own endpoints are answered by oidc-provider, mounted ahead of the
 * API's routes; with OIDC_ENABLED=false they are left out of the served contract. These are never
 * reached but by a request the provider left unanswered.
 */
const servedByTheProvider = async (): Promise<never> => {
  throw new NotFound('Not served here: the OpenID Connect provider is off');
};

export const openIdConfiguration: Handler<'openIdConfiguration'> = servedByTheProvider;
export const oauth2Authorize: Handler<'oauth2Authorize'> = servedByTheProvider;
export const oauth2Token: Handler<'oauth2Token'> = servedByTheProvider;
export const oauth2UserInfo: Handler<'oauth2UserInfo'> = servedByTheProvider;
export const oauth2Introspect: Handler<'oauth2Introspect'> = servedByTheProvider;
export const oauth2Revoke: Handler<'oauth2Revoke'> = servedByTheProvider;
export const oauth2EndSession: Handler<'oauth2EndSession'> = servedByTheProvider;
export const oauth2Register: Handler<'oauth2Register'> = servedByTheProvider;
export const oauth2DeviceAuthorization: Handler<'oauth2DeviceAuthorization'> = servedByTheProvider;
export const oauth2DeviceVerification: Handler<'oauth2DeviceVerification'> = servedByTheProvider;
export const oauth2DeviceVerificationSubmit: Handler<'oauth2DeviceVerificationSubmit'> = servedByTheProvider;
