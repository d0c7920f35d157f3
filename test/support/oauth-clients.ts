import { randomBytes, randomUUID } from 'node:crypto';
import { insertOauthClient } from '../../src/oidc/client-repository.js';
import { deriveKey, seal } from '../../src/infra/sealed.js';
import { TEST_SECRET, type TestContext } from './app.js';

export interface ClientInput {
  name: string;
  type: 'confidential' | 'public';
  redirect_uris: string[];
  post_logout_redirect_uris?: string[];
  scopes?: string[];
  first_party?: boolean;
  /** Registered by the application itself (RFC 7591) rather than made by an admin; false unless said. */
  registered?: boolean;
  /** How a confidential client sends its secret to the token endpoint; client_secret_basic unless said. */
  token_endpoint_auth_method?: 'client_secret_basic' | 'client_secret_post';
}

/**
 * A client of the service's OpenID Connect provider, written as an admin's would be (its secret sealed
 * as the provider reads it), for the suites that need an application before they test anything else.
 */
export async function seedOauthClient(t: TestContext, input: ClientInput): Promise<{ id: string; secret?: string }> {
  const id = randomUUID();
  const secret = input.type === 'confidential' ? randomBytes(32).toString('base64url') : undefined;
  await insertOauthClient(t.db, {
    client_id: id,
    name: input.name,
    type: input.type,
    client_secret_sealed: secret === undefined ? null : seal(deriveKey(TEST_SECRET, 'oauth-client-secret'), secret),
    metadata: {
      client_name: input.name,
      redirect_uris: input.redirect_uris,
      post_logout_redirect_uris: input.post_logout_redirect_uris ?? [],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      scope: (input.scopes ?? ['openid', 'profile', 'email', 'offline_access']).join(' '),
      token_endpoint_auth_method: secret === undefined ? 'none' : (input.token_endpoint_auth_method ?? 'client_secret_basic'),
    },
    first_party: input.first_party ?? false,
    registered: input.registered ?? false,
  });
  return { id, secret };
}
