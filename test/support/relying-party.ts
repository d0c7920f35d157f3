import type { TestContext } from './app.js';
import { FormBrowser, formTo, type Page } from './hosted-pages.js';

// An application that signs people in through the service's OpenID Connect provider: openid-client
// (a certified relying party) on one side, the hosted pages in a browser without JavaScript on the other.

export type OpenIdClient = typeof import('openid-client');
export type Jose = typeof import('jose');

/** openid-client and jose, loaded one after the other (the runner links a dependency they share once at a time). */
export async function relyingPartyLibraries(): Promise<{ oidc: OpenIdClient; jose: Jose }> {
  const jose = await import('jose');
  const oidc = await import('openid-client');
  return { oidc, jose };
}

/** The application's redirect URI: never opened, the test reads the code off the address. */
export const REDIRECT = 'http://127.0.0.1:9/callback';

export interface Application {
  id: string;
  secret?: string;
}

/** openid-client's configuration for the application, from the service's discovery document. */
export function relyingParty(oidc: OpenIdClient, t: TestContext, app: Application) {
  return oidc.discovery(new URL(t.baseUrl), app.id, undefined, app.secret ? oidc.ClientSecretBasic(app.secret) : oidc.None(), {
    execute: [oidc.allowInsecureRequests],
  });
}

export type Configuration = Awaited<ReturnType<typeof relyingParty>>;

/** An authorization request of the application: its URL, and the exchange of the code it comes back with. */
export async function authorizationRequest(oidc: OpenIdClient, config: Configuration, params: Record<string, string>) {
  const verifier = oidc.randomPKCECodeVerifier();
  const nonce = oidc.randomNonce();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    nonce,
    ...params,
  });
  /** The code exchange; `tokenParams` go to the token request too (`resource`, RFC 8707). */
  const exchange = (landed: Page, tokenParams?: Record<string, string>) => {
    if (landed.status !== 0)
      throw new Error(`expected a redirect to the application, got ${landed.status} at ${landed.url}:\n${landed.html}`);
    return oidc.authorizationCodeGrant(
      config,
      new URL(landed.url),
      { pkceCodeVerifier: verifier, expectedNonce: nonce, idTokenExpected: true },
      tokenParams,
    );
  };
  return { url, exchange };
}

/**
 * A person signs in to a first-party application on the hosted sign-in page with their e-mail and
 * password, asking for a refresh token too (offline_access, which comes with prompt=consent); the
 * tokens, and the service session the sign-in opened.
 */
export async function signInThroughProvider(
  oidc: OpenIdClient,
  t: TestContext,
  app: Application,
  who: { email: string; password: string; access: string },
  browser = new FormBrowser(t.baseUrl),
) {
  const config = await relyingParty(oidc, t, app);
  const before = await serviceSessions(t, who.access);
  const { url, exchange } = await authorizationRequest(oidc, config, { scope: 'openid email offline_access', prompt: 'consent' });
  const page = await browser.open(url.href);
  const tokens = await exchange(await browser.submit(formTo(page, '/login'), { email: who.email, password: who.password }));
  const opened = (await serviceSessions(t, who.access)).filter((id) => !before.includes(id));
  if (opened.length !== 1) throw new Error(`expected the sign-in to open one service session, found ${opened.length}`);
  return { config, tokens, browser, sid: opened[0] };
}

/** The ids of the service sessions a person has open (GET /api/auth/sessions). */
async function serviceSessions(t: TestContext, access: string): Promise<string[]> {
  const res = await t.get('/api/auth/sessions', { token: access });
  if (res.status !== 200) throw new Error(`GET /api/auth/sessions answered ${res.status}`);
  return (res.body.data as Array<{ id: string }>).map((session) => session.id);
}

/** A silent sign-in (prompt=none) in the browser: the error the application gets back, or null for a code. */
export async function silentSignIn(oidc: OpenIdClient, config: Configuration, browser: FormBrowser): Promise<string | null> {
  const { url } = await authorizationRequest(oidc, config, { scope: 'openid', prompt: 'none' });
  const landed = await browser.open(url.href);
  if (landed.status !== 0) throw new Error(`expected a redirect to the application, got ${landed.status} at ${landed.url}`);
  const params = new URL(landed.url).searchParams;
  return params.get('code') === null ? params.get('error') : null;
}

/** The OAuth error an openid-client call is refused with. */
export async function oauthError(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as { error?: string }).error ?? String(error);
  }
  throw new Error('expected the call to be refused');
}
