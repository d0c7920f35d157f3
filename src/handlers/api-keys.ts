import { created, noContent, ok, signedIn } from './reply.js';
import type { Handler } from './types.js';
import { apiKeyView, createdApiKeyView } from './views.js';

export const listApiKeys: Handler<'listApiKeys'> = async (input, { apiKeys }) => ok((await apiKeys.list(signedIn(input))).map(apiKeyView));

export const createApiKey: Handler<'createApiKey'> = async (input, { apiKeys }) => {
  const { row, key } = await apiKeys.create(signedIn(input), input.body);
  return created(createdApiKeyView(row, key));
};

export const deleteApiKey: Handler<'deleteApiKey'> = async (input, { apiKeys }) => {
  await apiKeys.remove(signedIn(input), input.path.id);
  return noContent();
};
