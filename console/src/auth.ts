import * as oauth from 'oauth4webapi';

/**
 * Signing in through the service's own OpenID Connect provider, as the built-in first-party public
 * client `console`: authorization code with PKCE through the hosted pages, tokens kept in this
 * page's memory only (a reload signs in again, silently while the provider's session lasts),
 * refreshed before they expire, and signing out through `end_session`.
 */

export const CLIENT_ID = 'console';
const SCOPE = 'openid profile email offline_access organizations';
const PENDING = 'console.sign-in';

const client: oauth.Client = { client_id: CLIENT_ID, token_endpoint_auth_method: 'none' };
const origin = window.location.origin;
export const redirectUri = `${origin}/console/callback`;
const afterSignOut = `${origin}/console/`;
// The service may be reached over plain HTTP (locally, or behind a proxy that ends TLS elsewhere).
const transport = window.location.protocol === 'http:' ? { [oauth.allowInsecureRequests]: true } : {};

interface Tokens {
  accessToken: string;
  refreshToken?: string;
  idToken?: string;
  /** When the access token expires (ms since the epoch). */
  expiresAt: number;
}

let server: oauth.AuthorizationServer | undefined;
let tokens: Tokens | undefined;
let refreshing: Promise<string> | undefined;
let organization: number | undefined;

/** Why the console cannot sign anyone in, said to the person. */
export class ProviderUnavailable extends Error {}

/** The provider's discovery document; ProviderUnavailable when the service runs without it. */
export async function discover(): Promise<oauth.AuthorizationServer> {
  if (server) return server;
  let response: Response;
  try {
    response = await oauth.discoveryRequest(new URL(origin), { algorithm: 'oidc', ...transport });
  } catch {
    throw new ProviderUnavailable('The service cannot be reached. Check your connection and reload the page.');
  }
  if (response.status === 404)
    throw new ProviderUnavailable(
      'The console signs in through the service’s OpenID Connect provider, which is turned off here. Set OIDC_ENABLED=true and restart the service.',
    );
  // The issuer is the service's JWT_ISSUER, which may name another address than the one this page
  // was loaded from; the document comes from this origin, so its own word is the one to check against.
  const { issuer } = (await response.clone().json()) as { issuer: string };
  server = await oauth.processDiscoveryResponse(new URL(issuer), response);
  return server;
}

/** Sends the browser to the hosted sign-in; it comes back to /console/callback. */
export async function signIn(returnTo: string): Promise<never> {
  const as = await discover();
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  // The verifier and state are not tokens: they only let this tab finish the sign-in it started.
  sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state, returnTo }));
  const url = new URL(as.authorization_endpoint!);
  url.search = new URLSearchParams({
    client_id: CLIENT_ID,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: SCOPE,
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  }).toString();
  window.location.assign(url.href);
  return new Promise<never>(() => {});
}

/** Finishes a sign-in at /console/callback; returns where the person was going. */
export async function finishSignIn(current: URL): Promise<string> {
  const as = await discover();
  const pending = JSON.parse(sessionStorage.getItem(PENDING) ?? 'null') as { verifier: string; state: string; returnTo: string } | null;
  sessionStorage.removeItem(PENDING);
  if (!pending) throw new Error('This sign-in was started in another tab or has already finished. Open the console again.');
  let params: URLSearchParams;
  try {
    params = oauth.validateAuthResponse(as, client, current, pending.state);
  } catch (error) {
    const description = error instanceof oauth.AuthorizationResponseError ? error.error_description || error.error : undefined;
    throw new Error(description ?? 'The sign-in did not finish. Open the console again.', { cause: error });
  }
  const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, pending.verifier, transport);
  keep(await oauth.processAuthorizationCodeResponse(as, client, response));
  return pending.returnTo.startsWith('/console') ? pending.returnTo : '/console/';
}

function keep(response: oauth.TokenEndpointResponse): void {
  // The organisation the sign-in acts for, as its ID token says (`org_id`); a refresh keeps it.
  const claims = oauth.getValidatedIdTokenClaims(response);
  if (claims) organization = typeof claims.org_id === 'number' || typeof claims.org_id === 'string' ? Number(claims.org_id) : undefined;
  tokens = {
    accessToken: response.access_token,
    refreshToken: response.refresh_token ?? tokens?.refreshToken,
    idToken: response.id_token ?? tokens?.idToken,
    expiresAt: Date.now() + (response.expires_in ?? 300) * 1000,
  };
}

export const signedIn = (): boolean => tokens !== undefined;

/** A valid access token, refreshed first when it is about to expire; signs in again when it cannot be. */
export async function accessToken(): Promise<string> {
  if (!tokens) return signIn(currentPath());
  if (tokens.expiresAt - Date.now() > 30_000) return tokens.accessToken;
  return refresh();
}

/** Trades the refresh token for new tokens (once at a time); signs in again when that fails. */
export function refresh(): Promise<string> {
  refreshing ??= (async () => {
    try {
      const as = await discover();
      if (!tokens?.refreshToken) return await signIn(currentPath());
      const response = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refreshToken, transport);
      keep(await oauth.processRefreshTokenResponse(as, client, response));
      return tokens.accessToken;
    } catch (error) {
      if (error instanceof oauth.ResponseBodyError) return signIn(currentPath());
      throw error;
    } finally {
      refreshing = undefined;
    }
  })();
  return refreshing;
}

/** The organisation the console's tokens act for, if any. */
export const activeOrganization = (): number | undefined => organization;

/**
 * Makes `id` the organisation the tokens act for: a refresh that names it (the provider checks the
 * membership, and a second factor where the organisation requires one). Its refusal is the error.
 */
export async function switchOrganization(id: number): Promise<void> {
  const as = await discover();
  if (!tokens?.refreshToken) throw new Error('This sign-in cannot switch organisations: sign out and in again.');
  const response = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refreshToken, {
    ...transport,
    additionalParameters: { organization_id: String(id) },
  });
  try {
    keep(await oauth.processRefreshTokenResponse(as, client, response));
  } catch (error) {
    if (error instanceof oauth.ResponseBodyError) throw new Error(error.error_description || error.error, { cause: error });
    throw error;
  }
}

/** Ends the provider's session (the hosted page asks the person to confirm) and forgets the tokens. */
export async function signOut(): Promise<void> {
  const as = await discover();
  const url = new URL(as.end_session_endpoint!);
  url.search = new URLSearchParams({
    client_id: CLIENT_ID,
    post_logout_redirect_uri: afterSignOut,
    ...(tokens?.idToken ? { id_token_hint: tokens.idToken } : {}),
  }).toString();
  tokens = undefined;
  window.location.assign(url.href);
}

const currentPath = () => `${window.location.pathname}${window.location.search}`;
