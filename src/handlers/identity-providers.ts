import type { components } from '../../generated/openapi.js';
import type { ListedIdentity } from '../providers/identity-repository.js';
import type { IdentityProviderRow } from '../providers/provider-repository.js';
import { iso } from '../users/user-view.js';
import { created, noContent, ok, redirect, signedIn } from './reply.js';
import type { Handler } from './types.js';
import { tokenPairView, userView } from './views.js';

type IdentityProvider = components['schemas']['IdentityProvider'];

/** A provider as admins see it: never its secret, only whether one is set. */
function providerView(row: IdentityProviderRow): IdentityProvider {
  return {
    slug: row.slug,
    kind: row.kind,
    name: row.name,
    client_id: row.client_id,
    has_client_secret: row.client_secret_sealed !== null,
    issuer: row.issuer,
    authorization_url: row.authorization_url,
    token_url: row.token_url,
    userinfo_url: row.userinfo_url,
    emails_url: row.emails_url,
    scopes: row.scopes,
    claims: row.claims,
    enabled: row.enabled,
    allow_signup: row.allow_signup,
    trust_email: row.trust_email,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export const listIdentityProviders: Handler<'listIdentityProviders'> = async (input, { providers }) =>
  ok((await providers.list(signedIn(input))).map(providerView));

export const createIdentityProvider: Handler<'createIdentityProvider'> = async (input, { providers }) =>
  created(providerView(await providers.create(signedIn(input), input.body)));

export const getIdentityProvider: Handler<'getIdentityProvider'> = async (input, { providers }) =>
  ok(providerView(await providers.get(signedIn(input), input.path.slug)));

export const updateIdentityProvider: Handler<'updateIdentityProvider'> = async (input, { providers }) =>
  ok(providerView(await providers.update(signedIn(input), input.path.slug, input.body)));

export const deleteIdentityProvider: Handler<'deleteIdentityProvider'> = async (input, { providers }) => {
  await providers.remove(signedIn(input), input.path.slug);
  return noContent();
};

export const listSignInProviders: Handler<'listSignInProviders'> = async (_input, { providers }) =>
  ok((await providers.enabled()).map((row) => ({ slug: row.slug, name: row.name })));

export const authorizeWithProvider: Handler<'authorizeWithProvider'> = async ({ path, query, client }, { providerSignIn }) =>
  redirect(await providerSignIn.authorize(path.slug, { redirectTo: query.redirect_to, codeChallenge: query.code_challenge }, client));

export const providerCallback: Handler<'providerCallback'> = async ({ path, query, client }, { providerSignIn }) =>
  redirect(await providerSignIn.callback(path.slug, query, client));

export const providerToken: Handler<'providerToken'> = async ({ body, client }, { providerSignIn }) => {
  const { user, tokens } = await providerSignIn.exchange(body.code, body.code_verifier, client);
  return ok({ ...tokenPairView(tokens), user: userView(user, user.role === 'admin') });
};

export const verifyProviderEmail: Handler<'verifyProviderEmail'> = async ({ body, client }, { providerSignIn }) => {
  const { user, tokens } = await providerSignIn.verifyAddress(body.verification_token, body.code, client);
  return ok({ ...tokenPairView(tokens), user: userView(user, user.role === 'admin') });
};

type Identity = components['schemas']['Identity'];

function identityView(row: ListedIdentity): Identity {
  return {
    id: row.id,
    provider: row.provider,
    subject: row.subject,
    email: row.email,
    created_at: iso(row.created_at),
    last_used_at: row.last_used_at === null ? null : iso(row.last_used_at),
  };
}

export const providerCallbackForm: Handler<'providerCallbackForm'> = async ({ path, body, client }, { providerSignIn }) =>
  redirect(await providerSignIn.callback(path.slug, body, client));

export const listIdentities: Handler<'listIdentities'> = async (input, { identities }) =>
  ok((await identities.list(signedIn(input))).map(identityView));

export const linkIdentity: Handler<'linkIdentity'> = async (input, { providerSignIn }) => {
  const { redirect_to: redirectTo, code_challenge: codeChallenge } = input.body;
  return ok({ authorization_url: await providerSignIn.startLink(signedIn(input), input.path.slug, { redirectTo, codeChallenge }) });
};

export const unlinkIdentity: Handler<'unlinkIdentity'> = async (input, { identities }) => {
  await identities.unlink(signedIn(input), input.path.id);
  return noContent();
};
