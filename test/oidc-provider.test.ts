import type { Server } from 'node:http';
import { ADMIN, startTestApp, type RegisteredUser, type StartOptions, type TestContext } from './support/app.js';
import { expectError } from './support/expect.js';
import { FormBrowser, formTo, signIn } from './support/hosted-pages.js';
import { freePort } from './support/net.js';

// The service as an OpenID Connect provider, with openid-client (a certified relying party) as the
// application and jose verifying what the service signs. People sign in on the hosted pages, as a
// browser without JavaScript would: the sign-in form with their e-mail and password, then the consent form.

const REDIRECT = 'http://127.0.0.1:9/callback';
const AFTER_LOGOUT = 'http://127.0.0.1:9/signed-out';

interface Running {
  t: TestContext;
  base: string;
  server: Server;
  close(): Promise<void>;
  stop(): Promise<void>;
}

/** An app whose issuer is its own address. */
async function startProvider(env: Record<string, string> = {}, options: StartOptions = {}): Promise<Running> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const t = await startTestApp({ APP_URL: base, ...env }, options);
  const server = t.app.koa.listen(port, '127.0.0.1');
  const shut = () => {
    server.close();
    server.closeAllConnections();
  };
  return {
    t,
    base,
    server,
    async close() {
      shut();
      await t.close();
    },
    async stop() {
      shut();
      await t.stop();
    },
  };
}

let p: Running;
let t: TestContext;
let base: string;
let oidc: any;
let jose: any;
let admin: string;

beforeAll(async () => {
  // One after the other: the runner's module registry links a dependency the two share once at a time.
  jose = await import('jose');
  oidc = await import('openid-client');
  p = await startProvider();
  ({ t, base } = p);
  admin = await t.adminToken();
});
afterAll(() => p?.close());

const person = () => t.register();

/** The ids of the service sessions a person has open. */
const sessionsOf = async (user: RegisteredUser) =>
  ((await t.get('/api/auth/sessions', { token: user.access })).body.data as Array<{ id: string }>).map((session) => session.id);

async function newClient(body: Record<string, unknown>, token = admin) {
  const res = await t.post('/api/oauth/clients', { redirect_uris: [REDIRECT], ...body }, { token });
  expect(res.status).toBe(201);
  return res.body.data as { client_id: string; client_secret?: string; [key: string]: unknown };
}

async function configFor(client: { client_id: string; client_secret?: string }) {
  return oidc.discovery(
    new URL(base),
    client.client_id,
    client.client_secret,
    client.client_secret === undefined ? oidc.None() : undefined,
    { execute: [oidc.allowInsecureRequests] },
  );
}

/** A page of the sign-in as the person saw it; for the consent page, the interaction it answers as stored. */
interface Seen {
  prompt: 'login' | 'consent';
  html?: string;
  interaction?: Record<string, any>;
}

/**
 * Runs an authorization request in `browser` to the application's redirect: signs in on the sign-in page
 * as `who`, and answers the consent page (when it comes) with `decision`; the URL the application gets back.
 */
async function authorize(
  browser: FormBrowser,
  url: URL,
  who: RegisteredUser,
  seen: Seen[] = [],
  decision: 'allow' | 'deny' = 'allow',
): Promise<URL> {
  let page = await signIn(browser, url.href, who.email, who.password);
  seen.push({ prompt: 'login' });
  if (page.status === 200) {
    const uid = new URL(page.url).pathname.split('/').at(-1)!;
    const row = await t.db
      .withTables<{ oidc_records: { model: string; id: string; payload: Record<string, any> } }>()
      .selectFrom('oidc_records')
      .select('payload')
      .where('model', '=', 'Interaction')
      .where('id', '=', uid)
      .executeTakeFirstOrThrow();
    seen.push({ prompt: 'consent', html: page.html, interaction: row.payload });
    page = await browser.submit(formTo(page, '/consent'), { decision });
  }
  expect(page.status).toBe(0);
  expect(page.url.startsWith('http://127.0.0.1:9/')).toBe(true);
  return new URL(page.url);
}

async function codeFlow(
  client: { client_id: string; client_secret?: string },
  who: RegisteredUser,
  // offline_access is granted to a third-party client only with prompt=consent (OpenID Connect Core 1.0, section 11).
  { scope = 'openid profile email offline_access', extra = { prompt: 'consent' }, browser = new FormBrowser(base) } = {},
) {
  const config = await configFor(client);
  const verifier = oidc.randomPKCECodeVerifier();
  const nonce = oidc.randomNonce();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT,
    scope,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    nonce,
    ...extra,
  });
  const seen: Seen[] = [];
  const before = await sessionsOf(who);
  const callback = await authorize(browser, url, who, seen);
  const tokens = await oidc.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: verifier,
    expectedNonce: nonce,
    idTokenExpected: true,
  });
  // The service session the sign-in page opened, beside the one registration opened.
  const opened = (await sessionsOf(who)).filter((id) => !before.includes(id));
  expect(opened).toHaveLength(1);
  return { config, tokens, seen, callback, browser, sid: opened[0] };
}

const introspect = async (config: any, token: string) => (await oidc.tokenIntrospection(config, token)).active as boolean;

/** The OAuth error an openid-client call is refused with. */
async function oauthError(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as { error?: string }).error ?? String(error);
  }
  throw new Error('expected the call to be refused');
}

describe('discovery', () => {
  it('serves the metadata at /.well-known/openid-configuration, endpoints under /oauth2/ and the JWKS of the service', async () => {
    const res = await fetch(`${base}/.well-known/openid-configuration`);
    expect(res.status).toBe(200);
    const metadata: any = await res.json();
    expect(metadata).toMatchObject({
      issuer: base,
      authorization_endpoint: `${base}/oauth2/authorize`,
      token_endpoint: `${base}/oauth2/token`,
      userinfo_endpoint: `${base}/oauth2/userinfo`,
      revocation_endpoint: `${base}/oauth2/revoke`,
      introspection_endpoint: `${base}/oauth2/introspect`,
      end_session_endpoint: `${base}/oauth2/end_session`,
      jwks_uri: `${base}/.well-known/jwks.json`,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: expect.arrayContaining(['authorization_code', 'refresh_token', 'client_credentials']),
      scopes_supported: expect.arrayContaining(['openid', 'profile', 'email', 'offline_access']),
      authorization_response_iss_parameter_supported: true,
    });
    expect(metadata.grant_types_supported).not.toContain('implicit');
    expect(metadata.grant_types_supported).not.toContain('password');
    // Registration is off by default.
    expect(metadata.registration_endpoint).toBeUndefined();
    expect((await fetch(`${base}/oauth2/register`, { method: 'POST' })).status).toBe(404);
  });
});

describe('clients (admin API)', () => {
  it('makes, lists, reads, changes and deletes clients; the secret is shown once and kept sealed', async () => {
    const made = await newClient({ name: 'Wiki', type: 'confidential', first_party: true });
    expect(made).toMatchObject({ name: 'Wiki', type: 'confidential', has_client_secret: true, first_party: true, registered: false });
    expect(made.client_secret).toEqual(expect.any(String));
    const row = await t.db
      .withTables<{ oauth_clients: any }>()
      .selectFrom('oauth_clients')
      .selectAll()
      .where('client_id', '=', made.client_id)
      .executeTakeFirstOrThrow();
    expect(row.client_secret_sealed).not.toContain(made.client_secret);
    expect(JSON.stringify(row.metadata)).not.toContain(made.client_secret);

    const listed = await t.get('/api/oauth/clients', { token: admin });
    expect(listed.status).toBe(200);
    const one = listed.body.data.find((c: any) => c.client_id === made.client_id);
    expect(one).not.toHaveProperty('client_secret');
    expect((await t.get(`/api/oauth/clients/${made.client_id}`, { token: admin })).body.data).toEqual(one);

    const changed = await t.put(
      `/api/oauth/clients/${made.client_id}`,
      { name: 'Wiki 2', redirect_uris: [REDIRECT, 'https://wiki.example.com/cb'] },
      { token: admin },
    );
    expect(changed.status).toBe(200);
    expect(changed.body.data).toMatchObject({
      name: 'Wiki 2',
      redirect_uris: [REDIRECT, 'https://wiki.example.com/cb'],
      type: 'confidential',
    });

    expect((await t.delete(`/api/oauth/clients/${made.client_id}`, { token: admin })).status).toBe(204);
    expectError(await t.get(`/api/oauth/clients/${made.client_id}`, { token: admin }), 404, 'NOT_FOUND');
    expectError(await t.delete(`/api/oauth/clients/${made.client_id}`, { token: admin }), 404, 'NOT_FOUND');
  });

  it('is for admins only', async () => {
    const user = await person();
    expectError(await t.get('/api/oauth/clients', { token: user.access }), 403, 'FORBIDDEN');
    expectError(
      await t.post('/api/oauth/clients', { name: 'X', type: 'public', redirect_uris: [REDIRECT] }, { token: user.access }),
      403,
      'FORBIDDEN',
    );
    expectError(await t.get('/api/oauth/clients'), 401, 'UNAUTHORIZED');
  });

  it('refuses redirect URIs and grants that cannot work', async () => {
    const refused = async (body: Record<string, unknown>, field: string) => {
      const res = await t.post('/api/oauth/clients', { name: 'Bad', ...body }, { token: admin });
      expectError(res, 422, 'VALIDATION_ERROR');
      expect(res.body.error.details.map((d: any) => d.field)).toContain(field);
    };
    await refused({ type: 'confidential', redirect_uris: ['http://wiki.example.com/cb'] }, 'body.redirect_uris.0');
    await refused({ type: 'confidential', redirect_uris: ['https://wiki.example.com/cb#frag'] }, 'body.redirect_uris.0');
    await refused({ type: 'confidential', redirect_uris: ['javascript:alert(1)'] }, 'body.redirect_uris.0');
    await refused({ type: 'confidential', redirect_uris: [] }, 'body.redirect_uris');
    await refused(
      { type: 'public', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'client_credentials'] },
      'body.grant_types',
    );
    await refused({ type: 'confidential', grant_types: ['refresh_token'] }, 'body.grant_types');
    // A native application's own scheme is fine.
    await newClient({ name: 'App', type: 'public', redirect_uris: ['com.example.app:/callback'] });
  });

  it('rotates a secret: the new one works and the old one stops at once', async () => {
    const client = await newClient({ name: 'Reports', type: 'confidential', grant_types: ['client_credentials'], redirect_uris: [] });
    const rotated = await t.post(`/api/oauth/clients/${client.client_id}/rotate-secret`, undefined, { token: admin });
    expect(rotated.status).toBe(200);
    expect(rotated.body.data).toEqual({ client_id: client.client_id, client_secret: expect.any(String) });
    expect(await oauthError(oidc.clientCredentialsGrant(await configFor(client)))).toBe('invalid_client');
    const fresh = await oidc.clientCredentialsGrant(await configFor({ ...client, client_secret: rotated.body.data.client_secret }));
    expect(fresh.access_token).toEqual(expect.any(String));

    const spa = await newClient({ name: 'SPA', type: 'public' });
    expectError(await t.post(`/api/oauth/clients/${spa.client_id}/rotate-secret`, undefined, { token: admin }), 422, 'VALIDATION_ERROR');
  });
});

describe('client credentials, introspection and revocation', () => {
  it('gives a confidential client a token that introspection knows until it is revoked', async () => {
    const client = await newClient({ name: 'Batch', type: 'confidential', grant_types: ['client_credentials'], redirect_uris: [] });
    const config = await configFor(client);
    const { access_token: token } = await oidc.clientCredentialsGrant(config);
    const live = await oidc.tokenIntrospection(config, token);
    expect(live).toMatchObject({ active: true, client_id: client.client_id });
    expect(live.sub).toBeUndefined();
    await oidc.tokenRevocation(config, token);
    expect(await introspect(config, token)).toBe(false);
  });

  it('refuses a wrong client secret', async () => {
    const client = await newClient({ name: 'Batch', type: 'confidential', grant_types: ['client_credentials'], redirect_uris: [] });
    expect(await oauthError(oidc.clientCredentialsGrant(await configFor({ ...client, client_secret: `${client.client_secret}x` })))).toBe(
      'invalid_client',
    );
    const res = await fetch(`${base}/oauth2/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${client.client_id}:wrong`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: 'invalid_client' });
  });

  it('is not for a client without the grant, nor the password grant for anyone', async () => {
    const client = await newClient({ name: 'Web', type: 'confidential' });
    expect(await oauthError(oidc.clientCredentialsGrant(await configFor(client)))).toBe('unauthorized_client');
    const res = await fetch(`${base}/oauth2/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ grant_type: 'password', username: ADMIN.email, password: ADMIN.password }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'unsupported_grant_type' });
  });
});

describe('the authorization code flow', () => {
  let web: Awaited<ReturnType<typeof newClient>>;
  beforeAll(async () => {
    web = await newClient({ name: 'Web app', type: 'confidential', post_logout_redirect_uris: [AFTER_LOGOUT] });
  });

  it('signs a person in, asks their consent, and gives an ID token that jose verifies with the JWKS', async () => {
    const who = await person();
    const { tokens, seen, callback } = await codeFlow(web, who);
    expect(seen.map((view) => view.prompt)).toEqual(['login', 'consent']);
    // Consent is asked (the client is not first party) by name, for this client, person and redirect URI.
    expect(seen[1].html).toContain('<strong>Web app</strong> asks to:');
    expect(seen[1].interaction).toMatchObject({
      params: { client_id: web.client_id, redirect_uri: REDIRECT },
      session: { accountId: String(who.id) },
    });
    expect(callback.searchParams.get('iss')).toBe(base);

    const jwks = jose.createRemoteJWKSet(new URL(`${base}/.well-known/jwks.json`));
    const { payload, protectedHeader } = await jose.jwtVerify(tokens.id_token, jwks, { issuer: base, audience: web.client_id });
    expect(protectedHeader.alg).toBe('RS256');
    expect(payload).toMatchObject({
      sub: String(who.id),
      amr: ['pwd'],
      auth_time: expect.any(Number),
      sid: expect.any(String),
      nonce: expect.any(String),
    });
    await expect(
      jose.jwtVerify(tokens.id_token, jwks, { issuer: 'https://elsewhere.example.com', audience: web.client_id }),
    ).rejects.toThrow();

    const info = await oidc.fetchUserInfo(await configFor(web), tokens.access_token, String(who.id));
    expect(info).toEqual({
      sub: String(who.id),
      name: who.name,
      email: who.email,
      email_verified: false,
      updated_at: expect.any(Number),
    });
  });

  it('works for a public client, with PKCE alone', async () => {
    const spa = await newClient({ name: 'SPA', type: 'public' });
    const who = await person();
    const { tokens } = await codeFlow(spa, who, { scope: 'openid email' });
    expect(tokens.claims()).toMatchObject({ sub: String(who.id), aud: spa.client_id });
  });

  it('skips consent for a first-party client', async () => {
    const own = await newClient({ name: 'Own', type: 'confidential', first_party: true });
    const { seen, tokens } = await codeFlow(own, await person());
    expect(seen.map((view) => view.prompt)).toEqual(['login']);
    expect(tokens.refresh_token).toEqual(expect.any(String));
  });

  it('gives access_denied when the person refuses', async () => {
    const config = await configFor(web);
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid',
      code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
    });
    const seen: Seen[] = [];
    const callback = await authorize(new FormBrowser(base), url, await person(), seen, 'deny');
    expect(seen.map((view) => view.prompt)).toEqual(['login', 'consent']);
    expect(callback.searchParams.get('error')).toBe('access_denied');
  });

  it('refuses plain PKCE, a request without PKCE and a token request without the verifier', async () => {
    const config = await configFor(web);
    const errorOf = async (params: Record<string, string>) => {
      const res = await new FormBrowser(base).request(
        oidc.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid', ...params }).href,
      );
      expect(res.status).toBe(303);
      return new URL(res.headers.get('location')!).searchParams;
    };
    const verifier = oidc.randomPKCECodeVerifier();
    expect((await errorOf({ code_challenge: verifier, code_challenge_method: 'plain' })).get('error')).toBe('invalid_request');
    expect((await errorOf({})).get('error')).toBe('invalid_request');

    const who = await person();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    const callback = await authorize(new FormBrowser(base), url, who);
    const code = callback.searchParams.get('code')!;
    const exchange = (extra: Record<string, string>) =>
      fetch(`${base}/oauth2/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${web.client_id}:${web.client_secret}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...extra }),
      });
    const missing = await exchange({});
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('refuses a redirect_uri that is not registered exactly, without sending the browser there', async () => {
    const config = await configFor(web);
    for (const redirect of [`${REDIRECT}/other`, `${REDIRECT}?x=1`, 'https://evil.example.com/callback']) {
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: redirect,
        scope: 'openid',
        code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
        code_challenge_method: 'S256',
      });
      const res = await new FormBrowser(base).request(url.href);
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(res.html).toContain('redirect_uri');
    }
  });

  it('rotates the refresh token on every use, and a refresh token used twice revokes the grant', async () => {
    const who = await person();
    const { config, tokens } = await codeFlow(web, who);
    const first = tokens.refresh_token;
    const second = await oidc.refreshTokenGrant(config, first);
    expect(second.refresh_token).toEqual(expect.any(String));
    expect(second.refresh_token).not.toBe(first);
    expect(await introspect(config, second.access_token)).toBe(true);

    // The spent one again: refused, and everything of the grant ends.
    expect(await oauthError(oidc.refreshTokenGrant(config, first))).toBe('invalid_grant');
    expect(await oauthError(oidc.refreshTokenGrant(config, second.refresh_token))).toBe('invalid_grant');
    expect(await introspect(config, second.access_token)).toBe(false);
  });

  it('lists the applications a person allowed, and revoking one ends its tokens', async () => {
    const who = await person();
    const { config, tokens } = await codeFlow(web, who);
    const listed = await t.get('/api/auth/oauth-grants', { token: who.access });
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([
      {
        id: expect.any(String),
        client_id: web.client_id,
        client_name: 'Web app',
        scopes: ['openid', 'profile', 'email', 'offline_access'],
        created_at: expect.any(String),
      },
    ]);
    const { id } = listed.body.data[0];
    // Someone else's grant is not theirs to revoke.
    const other = await person();
    expectError(await t.delete(`/api/auth/oauth-grants/${id}`, { token: other.access }), 404, 'NOT_FOUND');

    expect((await t.delete(`/api/auth/oauth-grants/${id}`, { token: who.access })).status).toBe(204);
    expect((await t.get('/api/auth/oauth-grants', { token: who.access })).body.data).toEqual([]);
    expect(await introspect(config, tokens.access_token)).toBe(false);
    expect(await oauthError(oidc.refreshTokenGrant(config, tokens.refresh_token))).toBe('invalid_grant');
    expectError(await t.delete(`/api/auth/oauth-grants/${id}`, { token: who.access }), 404, 'NOT_FOUND');
  });

  it('ends the provider session and its tokens when the service session is revoked', async () => {
    const who = await person();
    const { config, tokens, browser, sid } = await codeFlow(web, who);
    // The session the sign-in page opened, revoked from the session registration opened.
    expect((await t.delete(`/api/auth/sessions/${sid}`, { token: who.access })).status).toBe(204);
    expect(await oauthError(oidc.refreshTokenGrant(config, tokens.refresh_token))).toBe('invalid_grant');
    expect(await introspect(config, tokens.access_token)).toBe(false);
    // The browser's provider session is gone too: prompt=none cannot sign in silently.
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid',
      prompt: 'none',
      code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
    });
    const res = await browser.open(url.href);
    expect(res.status).toBe(0);
    expect(new URL(res.url).searchParams.get('error')).toBe('login_required');
  });

  it('ends the tokens of a user an admin disables', async () => {
    const who = await person();
    const { config, tokens } = await codeFlow(web, who);
    expect((await t.put(`/api/users/${who.id}`, { is_active: false }, { token: admin })).status).toBe(200);
    expect(await oauthError(oidc.refreshTokenGrant(config, tokens.refresh_token))).toBe('invalid_grant');
    expect(await introspect(config, tokens.access_token)).toBe(false);
    const info = await fetch(`${base}/oauth2/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(info.status).toBe(401);
    expect(info.headers.get('www-authenticate')).toContain('invalid_token');
  });

  it('signs the person out at the application’s request and sends them back', async () => {
    const who = await person();
    const { config, tokens, browser, sid } = await codeFlow(web, who);
    const url = oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token, post_logout_redirect_uri: AFTER_LOGOUT });
    const question = await browser.request(url.href);
    expect(question.status).toBe(200);
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(question.html)![1];
    const done = await browser.request('/oauth2/end_session/confirm', { form: { xsrf, logout: 'yes' } });
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe(AFTER_LOGOUT);
    // The service session the sign-in opened has ended with it; the one registration opened has not.
    const left = await sessionsOf(who);
    expect(left).not.toContain(sid);
    expect(left).toHaveLength(1);
    expect(await oauthError(oidc.refreshTokenGrant(config, tokens.refresh_token))).toBe('invalid_grant');
    // Signed out: prompt=none cannot sign in silently any more.
    const again = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid',
      prompt: 'none',
      code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
    });
    const res = await browser.open(again.href);
    expect(res.status).toBe(0);
    expect(new URL(res.url).searchParams.get('error')).toBe('login_required');
  });
});

describe('dynamic client registration', () => {
  const register = (on: Running, token?: string) =>
    fetch(`${on.base}/oauth2/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify({ client_name: 'Connector', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }),
    });

  it('with OIDC_REGISTRATION=token, asks for the initial access token', async () => {
    const token = 'an-initial-access-token-long-enough';
    const on = await startProvider({ OIDC_REGISTRATION: 'token', OIDC_REGISTRATION_TOKEN: token });
    try {
      expect((await register(on)).status).toBe(401);
      expect((await register(on, 'wrong-token-that-is-long-enough')).status).toBe(401);
      const res = await register(on, token);
      expect(res.status).toBe(201);
      expect(await res.json()).toMatchObject({ client_id: expect.any(String), client_name: 'Connector' });
    } finally {
      await on.close();
    }
  });

  it('with OIDC_REGISTRATION=open, lets anyone register a client that is never first party; its signing key survives a restart', async () => {
    const on = await startProvider({ OIDC_REGISTRATION: 'open' });
    let restarted: Running | undefined;
    try {
      const res = await register(on);
      expect(res.status).toBe(201);
      const { client_id: clientId } = (await res.json()) as any;
      const onAdmin = await on.t.adminToken();
      const listed = (await on.t.get(`/api/oauth/clients/${clientId}`, { token: onAdmin })).body.data;
      expect(listed).toMatchObject({ name: 'Connector', type: 'public', registered: true, first_party: false });
      expectError(await on.t.put(`/api/oauth/clients/${clientId}`, { first_party: true }, { token: onAdmin }), 422, 'VALIDATION_ERROR');

      const before: any = await (await fetch(`${on.base}/.well-known/jwks.json`)).json();
      expect(before.keys).toHaveLength(1);
      await on.stop();
      restarted = await startProvider({ OIDC_REGISTRATION: 'open' }, { sameDatabaseAs: on.t });
      await fetch(`${restarted.base}/.well-known/openid-configuration`);
      const after: any = await (await fetch(`${restarted.base}/.well-known/jwks.json`)).json();
      expect(after.keys.map((key: any) => key.kid)).toEqual(before.keys.map((key: any) => key.kid));
    } finally {
      await restarted?.close();
      await on.close();
    }
  });
});
