import { startTestApp, type RegisteredUser, type TestContext } from './support/app.js';
import { FormBrowser, formTo } from './support/hosted-pages.js';
import { freePort } from './support/net.js';
import { seedOauthClient } from './support/oauth-clients.js';
import { REDIRECT, relyingPartyLibraries, type OpenIdClient } from './support/relying-party.js';

// The API takes the access tokens the OpenID Connect provider issues to first-party clients (the
// built-in console, or a client an admin marked first party), acting through the session the hosted
// sign-in opened; every other client's tokens are for the provider's own endpoints and get 401 here,
// whoever the person behind them is. The console's client exists without anyone making it.

let t: TestContext;
let oidc: OpenIdClient;
let origin: string;
let admin: string;

beforeAll(async () => {
  ({ oidc } = await relyingPartyLibraries());
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  t = await startTestApp({ APP_URL: origin }, { port });
  admin = await t.adminToken();
});
afterAll(() => t?.close());

/**
 * A person signs in to `client` on the hosted page (authorization code with PKCE, as the console
 * does): its tokens, and the service session the sign-in opened.
 */
async function signIn(who: RegisteredUser, client: { id: string; secret?: string; redirect: string; scope: string }) {
  const config = await oidc.discovery(
    new URL(t.baseUrl),
    client.id,
    undefined,
    client.secret ? oidc.ClientSecretBasic(client.secret) : oidc.None(),
    { execute: [oidc.allowInsecureRequests] },
  );
  const verifier = oidc.randomPKCECodeVerifier();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: client.redirect,
    scope: client.scope,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  const browser = new FormBrowser(t.baseUrl);
  const before = await sessionsOf(who);
  let page = await browser.submit(formTo(await browser.open(url.href), '/login'), { email: who.email, password: who.password });
  // A client that is not first party asks the person; the console and first-party clients never do.
  const landed = (at: typeof page) => at.status === 0 || at.url.startsWith(`${client.redirect}?`);
  if (!landed(page)) page = await browser.submit(formTo(page, '/consent'), { decision: 'allow' });
  expect(landed(page)).toBe(true);
  const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url), { pkceCodeVerifier: verifier, idTokenExpected: true });
  const opened = (await sessionsOf(who)).filter((id) => !before.includes(id));
  expect(opened).toHaveLength(1);
  return { config, tokens, sid: opened[0], page };
}

const sessionsOf = async (who: RegisteredUser) =>
  ((await t.get('/api/auth/sessions', { token: who.access })).body.data as Array<{ id: string }>).map((session) => session.id);

const consoleClient = () => ({
  id: 'console',
  redirect: `${origin}/console/callback`,
  scope: 'openid profile email offline_access organizations',
});

describe('the console’s client', () => {
  it('exists without anyone making it: first party (no consent page), public with PKCE, with a refresh token', async () => {
    const who = await t.register();
    const { tokens, sid } = await signIn(who, consoleClient());
    expect(tokens.refresh_token).toEqual(expect.any(String));
    const me = await t.get('/api/auth/me', { token: tokens.access_token });
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ id: who.id, email: who.email });
    // It acts through the session the hosted sign-in opened, which is marked as the caller's own.
    const sessions = await t.get('/api/auth/sessions', { token: tokens.access_token });
    expect(sessions.body.data.filter((session: { current: boolean }) => session.current).map((s: { id: string }) => s.id)).toEqual([sid]);
  });

  it('is nobody’s to list, change or delete', async () => {
    const listed = await t.get('/api/oauth/clients?limit=100', { token: admin });
    expect(listed.body.data.map((client: { client_id: string }) => client.client_id)).not.toContain('console');
    expect((await t.get('/api/oauth/clients/console', { token: admin })).status).toBe(404);
    expect((await t.delete('/api/oauth/clients/console', { token: admin })).status).toBe(404);
  });

  it('only ever sends a sign-in back to the console’s own address', async () => {
    const config = await oidc.discovery(new URL(t.baseUrl), 'console', undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: 'https://attacker.example/console/callback',
      scope: 'openid',
      code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
    });
    const page = await new FormBrowser(t.baseUrl).open(url.href);
    // The provider's error page, at the service: never a redirect to the address asked for.
    expect(page.status).toBe(400);
    expect(page.url.startsWith(t.baseUrl)).toBe(true);
    expect(page.html).toContain('redirect_uri');
  });
});

describe('provider tokens on the API', () => {
  it('refuses the access token of a client that is not first party, even an admin’s', async () => {
    const app = await seedOauthClient(t, { name: 'Third party', type: 'confidential', redirect_uris: [REDIRECT] });
    const who = await t.register();
    const { tokens } = await signIn(who, { id: app.id, secret: app.secret, redirect: REDIRECT, scope: 'openid email' });
    // The token is good for the provider's own endpoints…
    const info = await fetch(`${t.baseUrl}/oauth2/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(info.status).toBe(200);
    // …and nothing of the API.
    const me = await t.get('/api/auth/me', { token: tokens.access_token });
    expect(me.status).toBe(401);
    expect(me.body.error.code).toBe('UNAUTHORIZED');

    // An admin signing in to the same application does not give it the admin's powers.
    const adminUser = (await t.get('/api/auth/me', { token: admin })).body.data;
    const adminPassword = 'admin-password-1';
    const adminTokens = await signIn({ ...adminUser, password: adminPassword, access: admin, refresh: '' } as RegisteredUser, {
      id: app.id,
      secret: app.secret,
      redirect: REDIRECT,
      scope: 'openid email',
    });
    const users = await t.get('/api/users', { token: adminTokens.tokens.access_token });
    expect(users.status).toBe(401);
  });

  it('takes the access token of a client an admin marked first party', async () => {
    const app = await seedOauthClient(t, { name: 'Own app', type: 'confidential', redirect_uris: [REDIRECT], first_party: true });
    const who = await t.register();
    const { tokens } = await signIn(who, { id: app.id, secret: app.secret, redirect: REDIRECT, scope: 'openid email' });
    expect((await t.get('/api/auth/me', { token: tokens.access_token })).status).toBe(200);
  });

  it('refuses a first-party client’s token that names no person (client credentials)', async () => {
    const app = await seedOauthClient(t, { name: 'Back end', type: 'confidential', redirect_uris: [REDIRECT], first_party: true });
    await t.db
      .updateTable('oauth_clients' as never)
      .set({
        metadata: JSON.stringify({ ...(await metadataOf(app.id)), grant_types: ['authorization_code', 'client_credentials'] }),
      } as never)
      .where('client_id' as never, '=', app.id as never)
      .execute();
    const response = await fetch(`${t.baseUrl}/oauth2/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${app.id}:${app.secret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    });
    expect(response.status).toBe(200);
    const { access_token } = (await response.json()) as { access_token: string };
    expect((await t.get('/api/auth/me', { token: access_token })).status).toBe(401);
  });

  it('ends with the session: a revoked session, a disabled person and a forged token get 401', async () => {
    const who = await t.register();
    const first = await signIn(who, consoleClient());
    expect((await t.delete(`/api/auth/sessions/${first.sid}`, { token: who.access })).status).toBe(204);
    expect((await t.get('/api/auth/me', { token: first.tokens.access_token })).status).toBe(401);

    const second = await signIn(who, consoleClient());
    expect((await t.get('/api/auth/me', { token: second.tokens.access_token })).status).toBe(200);
    expect((await t.put(`/api/users/${who.id}`, { is_active: false }, { token: admin })).status).toBe(200);
    expect((await t.get('/api/auth/me', { token: second.tokens.access_token })).status).toBe(401);

    // Something shaped like a provider token that the provider never issued.
    expect((await t.get('/api/auth/me', { token: 'x'.repeat(43) })).status).toBe(401);
  });

  it('renews the proof of presence for the session it acts through', async () => {
    const who = await t.register();
    const { tokens, sid } = await signIn(who, consoleClient());
    // Older than REAUTH_MAX_AGE_MINUTES: adding a way in asks for proof first.
    await t.db
      .updateTable('sessions')
      .set({ authenticated_at: new Date(Date.now() - 3600_000) })
      .where('id', '=', sid)
      .execute();
    const refused = await t.post('/api/auth/api-keys', { name: 'ci' }, { token: tokens.access_token });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('REAUTH_REQUIRED');
    const renewed = await t.post('/api/auth/reauthenticate', { password: who.password }, { token: tokens.access_token });
    expect(renewed.status).toBe(200);
    const created = await t.post('/api/auth/api-keys', { name: 'ci' }, { token: tokens.access_token });
    expect(created.status).toBe(201);
  });
});

async function metadataOf(clientId: string): Promise<Record<string, unknown>> {
  const row = await t.db
    .withTables<{ oauth_clients: { client_id: string; metadata: Record<string, unknown> } }>()
    .selectFrom('oauth_clients')
    .select('metadata')
    .where('client_id', '=', clientId)
    .executeTakeFirstOrThrow();
  return row.metadata;
}
