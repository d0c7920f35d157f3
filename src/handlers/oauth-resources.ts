import type { ResourceView } from '../oidc/resources.js';
import { iso } from '../users/user-view.js';
import { created, noContent, ok, signedIn } from './reply.js';
import type { Handler } from './types.js';

function resourceView(resource: ResourceView) {
  return { ...resource, created_at: iso(resource.created_at), updated_at: iso(resource.updated_at) };
}

export const listOauthResources: Handler<'listOauthResources'> = async (input, { oauthResources }) =>
  ok((await oauthResources.list(signedIn(input))).map(resourceView));

export const createOauthResource: Handler<'createOauthResource'> = async (input, { oauthResources }) =>
  created(resourceView(await oauthResources.create(signedIn(input), input.body)));

export const getOauthResource: Handler<'getOauthResource'> = async (input, { oauthResources }) =>
  ok(resourceView(await oauthResources.get(signedIn(input), input.path.id)));

export const updateOauthResource: Handler<'updateOauthResource'> = async (input, { oauthResources }) =>
  ok(resourceView(await oauthResources.update(signedIn(input), input.path.id, input.body)));

export const deleteOauthResource: Handler<'deleteOauthResource'> = async (input, { oauthResources }) => {
  await oauthResources.remove(signedIn(input), input.path.id);
  return noContent();
};
