import { generateKeyPairSync } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import { startTestApp, type TestContext } from './support/app.js';
import { expectError } from './support/expect.js';
import { FormBrowser, formsOf, formTo } from './support/hosted-pages.js';
import { freePort } from './support/net.js';
import { seedOauthClient } from './support/oauth-clients.js';
import {
  authorizationRequest,
  oauthError,
  REDIRECT,
  relyingParty,
  relyingPartyLibraries,
  signInThroughProvider,
  type Application,
  type Jose,
  type OpenIdClient,
} from './support/relying-party.js';

// What the provider's addresses and tokens say: discovery names the issuer's addresses whatever host the
// request names; an ID token's acr and amr say how the person signed in; the client credentials grant has
// no user and no OpenID scope; and neither side accepts the other's tokens (the API's bearer tokens at the
// provider, the provider's at the API), even with the one key both sign with.

const STEP_MS = 30_000;
const midStep = (ms: number) => Math.floor(ms / STEP_MS) * STEP_MS + STEP_MS / 2;
let clock = midStep(Date.now());
const codeFor = (secret: string) =>
  new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp: clock });

let t: TestContext;
let oidc: OpenIdClient;
let jose: Jose;
let admin: string;
let app: Application;
let issuer: string;

/** An app whose issuer is its own address (APP_URL), on a port of its own. */
async function startIssuer(env: Record<string, string> = {}) {
  const port = await freePort();
  return startTestApp({ APP_URL: `http://127.0.0.1:${port}`, ...env }, { port, clock: () => clock });
}

beforeAll(async () => {
  ({ oidc, jose } = await relyingPartyLibraries());
  // The API's tokens and the provider's ID tokens signed with one RSA key, as ALGORITHM=RS256 does.
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  t = await startIssuer({ ALGORITHM: 'RS256', JWT_PRIVATE_KEY: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() });
  issuer = t.baseUrl;
  admin = await t.adminToken();
  app = await seedOauthClient(t, { name: 'Notes', type: 'confidential', redirect_uris: [REDIRECT], first_party: true });
});
afterAll(() => t?.close());
beforeEach(() => {
  clock = midStep(Date.now());
});

/** Every absolute address a discovery document names. */
function addressesOf(metadata: Record<string, unknown>): string[] {
  return Object.entries(metadata)
    .filter(([key, value]) => typeof value === 'string' && (key.endsWith('_endpoint') || key.endsWith('_uri') || key === 'issuer'))
    .map(([, value]) => value as string);
}

describe('discovery', () => {
  it('names the issuer’s addresses whatever Host the request names', async () => {
    const res = await t.get('/.well-known/openid-configuration', { headers: { Host: 'evil.example' } });
    expect(res.status).toBe(200);
    const addresses = addressesOf(res.body);
    expect(addresses.length).toBeGreaterThanOrEqual(8);
    for (const address of addresses) expect(address === issuer || address.startsWith(`${issuer}/`)).toBe(true);
    expect(res.body).toMatchObject({
      issuer,
      authorization_endpoint: `${issuer}/oauth2/authorize`,
      token_endpoint: `${issuer}/oauth2/token`,
    });
  });

  it('and whatever host and scheme a trusted proxy forwards (TRUST_PROXY)', async () => {
    const behind = await startIssuer({ TRUST_PROXY: 'true' });
    try {
      const res = await behind.get('/.well-known/openid-configuration', {
        headers: { Host: 'evil.example', 'X-Forwarded-Host': 'evil.example', 'X-Forwarded-Proto': 'https' },
      });
      expect(res.status).toBe(200);
      for (const address of addressesOf(res.body))
        expect(address === behind.baseUrl || address.startsWith(`${behind.baseUrl}/`)).toBe(true);
    } finally {
      await behind.close();
    }
  });

  it('sends the browser back to the issuer after signing in, whatever Host the authorization request named', async () => {
    const config = await relyingParty(oidc, t, app);
    const { url } = await authorizationRequest(oidc, config, { scope: 'openid' });
    const asked = await t.get(`${url.pathname}${url.search}`, { headers: { Host: 'evil.example' } });
    expect(asked.status).toBe(303);
    const uid = new URL(asked.headers.location, issuer).pathname.split('/').at(-1)!;
    const interaction = await t.db
      .withTables<{ oidc_records: { model: string; id: string; payload: { returnTo?: string } } }>()
      .selectFrom('oidc_records')
      .select('payload')
      .where('model', '=', 'Interaction')
      .where('id', '=', uid)
      .executeTakeFirstOrThrow();
    // Where the hosted pages send the browser once the person has signed in.
    expect(interaction.payload.returnTo).toBe(`${issuer}/oauth2/authorize/${uid}`);
  });

  it('advertises the acr values its ID tokens carry', async () => {
    const metadata = (await t.get('/.well-known/openid-configuration')).body;
    expect(metadata.acr_values_supported).toEqual(['aal1', 'aal2']);
    expect(metadata.claims_supported).toEqual(expect.arrayContaining(['acr', 'amr', 'auth_time']));
  });
});

describe('acr and amr of the ID token', () => {
  const verified = async (idToken: string) =>
    (
      await jose.jwtVerify(idToken, jose.createRemoteJWKSet(new URL(`${issuer}/.well-known/jwks.json`)), {
        issuer,
        audience: app.id,
        typ: 'JWT',
      })
    ).payload;

  it('say aal1 and pwd after a password alone', async () => {
    const who = await t.register();
    const { tokens } = await signInThroughProvider(oidc, t, app, who);
    expect(await verified(tokens.id_token!)).toMatchObject({ acr: 'aal1', amr: ['pwd'] });
  });

  it('say aal2 and otp, mfa after a password and a TOTP code on the hosted pages; a refresh keeps them', async () => {
    const who = await t.register();
    const api = t.clientFor(who.access);
    const started = (await api.POST('/api/auth/mfa/totp', { body: { name: 'Phone' } })).data!.data;
    const confirmed = await api.POST('/api/auth/mfa/totp/{id}/confirm', {
      params: { path: { id: started.factor_id } },
      body: { code: codeFor(started.secret) },
    });
    expect(confirmed.response.status).toBe(200);
    // The confirmation spent this time step's code: the sign-in happens in the next one.
    clock += STEP_MS;

    const config = await relyingParty(oidc, t, app);
    const { url, exchange } = await authorizationRequest(oidc, config, { scope: 'openid offline_access', prompt: 'consent' });
    const browser = new FormBrowser(issuer);
    const page = await browser.open(url.href);
    const second = await browser.submit(formTo(page, '/login'), { email: who.email, password: who.password });
    const totp = formsOf(second).find((form) => form.fields.method === 'totp')!;
    const tokens = await exchange(await browser.submit(totp, { code: codeFor(started.secret) }));
    const claims = await verified(tokens.id_token!);
    expect(claims.acr).toBe('aal2');
    expect(claims.amr).toEqual(expect.arrayContaining(['pwd', 'otp', 'mfa']));

    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(await verified(refreshed.id_token!)).toMatchObject({ acr: 'aal2', amr: claims.amr });
  });
});

describe('the client credentials grant', () => {
  let batch: { client_id: string; client_secret: string };
  beforeAll(async () => {
    const res = await t.post(
      '/api/oauth/clients',
      { name: 'Batch', type: 'confidential', grant_types: ['client_credentials'], redirect_uris: [] },
      { token: admin },
    );
    expect(res.status).toBe(201);
    batch = res.body.data;
  });

  const tokenRequest = (scope?: string) =>
    fetch(`${issuer}/oauth2/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${batch.client_id}:${batch.client_secret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', ...(scope === undefined ? {} : { scope }) }),
    });

  const issued = () =>
    t.db
      .withTables<{ oidc_records: { model: string; client_id: string | null } }>()
      .selectFrom('oidc_records')
      .select('model')
      .where('model', '=', 'ClientCredentials')
      .where('client_id', '=', batch.client_id)
      .execute();

  it('refuses OpenID scopes with invalid_scope: there is no user', async () => {
    for (const scope of ['openid email', 'openid', 'profile', 'email', 'offline_access']) {
      const res = await tokenRequest(scope);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ error: 'invalid_scope' });
    }
    expect(await issued()).toEqual([]);
  });

  it('still gives a token without them', async () => {
    const before = (await issued()).length;
    const res = await tokenRequest();
    expect(res.status).toBe(200);
    const body = (await res.json()) as { access_token: string; scope?: string };
    expect(body.scope).toBeUndefined();
    expect(await issued()).toHaveLength(before + 1);
  });
});

describe('the provider’s tokens and the API’s are not interchangeable', () => {
  it('the API refuses the provider’s ID token as a bearer token (its access tokens only for first-party clients: console-api-access.test.ts)', async () => {
    const who = await t.register();
    const { tokens } = await signInThroughProvider(oidc, t, app, who);
    // Signed with the very key of the API's tokens, by the same issuer, for the same person.
    const header = jose.decodeProtectedHeader(tokens.id_token!);
    expect(header).toMatchObject({ alg: 'RS256', kid: jose.decodeProtectedHeader(who.access).kid });
    // A plain JWT (RFC 7519 §5.1), never an access token's type.
    expect(header.typ).toBe('JWT');
    expectError(await t.get('/api/auth/me', { token: tokens.id_token! }), 401, 'UNAUTHORIZED');
    // The application is first party: its access token acts through the session its sign-in opened.
    expect((await t.get('/api/auth/me', { token: tokens.access_token })).status).toBe(200);
    expect((await t.get('/api/auth/me', { token: who.access })).status).toBe(200);
  });

  it('the provider refuses the API’s access token at userinfo and introspection', async () => {
    const who = await t.register();
    const config = await relyingParty(oidc, t, app);
    const info = await fetch(`${issuer}/oauth2/userinfo`, { headers: { authorization: `Bearer ${who.access}` } });
    expect(info.status).toBe(401);
    expect(info.headers.get('www-authenticate')).toContain('invalid_token');
    // Introspection knows only the provider's own (opaque) tokens: a JWT is refused outright.
    expect(await oauthError(oidc.tokenIntrospection(config, who.access))).toBe('unsupported_token_type');
    expect(await oauthError(oidc.refreshTokenGrant(config, who.refresh))).toBe('invalid_grant');
  });
});
