import { startTestApp, type RegisteredUser, type TestContext } from './support/app.js';
import { expectError } from './support/expect.js';
import { startLogoutReceiver, type LogoutReceiver, type ReceivedLogout } from './support/logout-receiver.js';
import { freePort } from './support/net.js';
import {
  REDIRECT,
  relyingPartyLibraries,
  signInThroughProvider,
  type Application,
  type Jose,
  type OpenIdClient,
} from './support/relying-party.js';
import { linkToken, startSmtpServer, type TestSmtpServer } from './support/smtp.js';
import { until } from './support/wait.js';

// OpenID Connect Back-Channel Logout 1.0: when a session a client took part in ends (the client asks
// for the logout, the person logs out or revokes the session or the client's grant, changes or resets
// the password, is disabled or deleted), the provider POSTs the client's backchannel_logout_uri one
// signed logout token, delivered from a queue like webhooks, never while the person waits.

const EVENT = 'http://schemas.openid.net/event/backchannel-logout';
const AFTER_LOGOUT = 'http://127.0.0.1:9/signed-out';
/** How long one delivery attempt may take here. */
const TIMEOUT_MS = 3000;

let t: TestContext;
let smtp: TestSmtpServer;
let oidc: OpenIdClient;
let jose: Jose;
let admin: string;
let receiver: LogoutReceiver;
let app: Application;

beforeAll(async () => {
  ({ oidc, jose } = await relyingPartyLibraries());
  smtp = await startSmtpServer();
  receiver = await startLogoutReceiver();
  // The issuer is APP_URL: the app listens where APP_URL says.
  const port = await freePort();
  t = await startTestApp(
    {
      APP_URL: `http://127.0.0.1:${port}`,
      SMTP_URL: smtp.url,
      MAIL_POLL_INTERVAL_MS: '100',
      WEBHOOK_POLL_INTERVAL_MS: '100',
      WEBHOOK_RETRY_BASE_MS: '50',
      WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
      WEBHOOK_MAX_ATTEMPTS: '5',
    },
    { port },
  );
  admin = await t.adminToken();
  app = await newClient('Notes', receiver.url);
});
afterAll(async () => {
  await t?.close();
  await smtp?.close();
  await receiver?.close();
});

/** A first-party client made through the admin API, whose back-channel logout URI is `uri`. */
async function newClient(name: string, uri: string, extra: Record<string, unknown> = {}): Promise<Application> {
  const res = await t.post(
    '/api/oauth/clients',
    {
      name,
      type: 'confidential',
      redirect_uris: [REDIRECT],
      post_logout_redirect_uris: [AFTER_LOGOUT],
      first_party: true,
      backchannel_logout_uri: uri,
      ...extra,
    },
    { token: admin },
  );
  expect(res.status).toBe(201);
  return { id: res.body.data.client_id as string, secret: res.body.data.client_secret as string };
}

/** The queued logouts of a client and sid (one at most). */
const deliveries = (clientId: string, sid: string) =>
  t.db
    .withTables<{ oidc_logout_deliveries: { client_id: string; sid: string; status: string; attempts: number; jti: string } }>()
    .selectFrom('oidc_logout_deliveries')
    .select(['status', 'attempts', 'jti'])
    .where('client_id', '=', clientId)
    .where('sid', '=', sid)
    .execute();

/** A person signed in to `application` through the hosted pages; `idToken` holds the ID token's claims (its `sid`). */
async function signedIn(application: Application = app, who?: RegisteredUser) {
  const person = who ?? (await t.register());
  const session = await signInThroughProvider(oidc, t, application, person);
  const idToken = session.tokens.claims()!;
  expect(idToken.sid).toEqual(expect.any(String));
  return { who: person, ...session, idToken };
}

/** Verifies a logout token as a relying party must (Back-Channel Logout 1.0, section 2.6), against the service's JWK Set. */
async function verified(received: ReceivedLogout, clientId: string, idToken: { iss: string; sub: string; sid?: unknown }) {
  expect(received.contentType).toBe('application/x-www-form-urlencoded');
  const jwks = jose.createRemoteJWKSet(new URL(`${t.baseUrl}/.well-known/jwks.json`));
  const { payload, protectedHeader } = await jose.jwtVerify(received.token, jwks, {
    issuer: idToken.iss,
    audience: clientId,
    typ: 'logout+jwt',
    requiredClaims: ['iat', 'jti', 'events', 'sub', 'sid'],
  });
  expect(protectedHeader.typ).toBe('logout+jwt');
  expect(payload).toMatchObject({ iss: idToken.iss, aud: clientId, sub: idToken.sub, sid: idToken.sid, events: { [EVENT]: {} } });
  expect(payload).not.toHaveProperty('nonce');
  return payload;
}

/** Waits until the client's logout of `sid` is delivered, then checks it came exactly once and verifies. */
async function expectOneLogout(clientId: string, idToken: { iss: string; sub: string; sid?: unknown }, to = receiver) {
  const sid = idToken.sid as string;
  await until(async () => (await deliveries(clientId, sid))[0]?.status === 'delivered', `the logout of ${sid} to be delivered`);
  const got = to.withSid(sid);
  expect(got).toHaveLength(1);
  expect(got[0].status).toBe(200);
  const payload = await verified(got[0], clientId, idToken);
  expect(payload.jti).toBe((await deliveries(clientId, sid))[0].jti);
}

describe('clients take a back-channel logout URI', () => {
  it('discovery says the provider sends logout tokens, with sid', async () => {
    const metadata = (await (await fetch(`${t.baseUrl}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(metadata).toMatchObject({ backchannel_logout_supported: true, backchannel_logout_session_supported: true });
  });

  it('POST and PUT /api/oauth/clients take and show backchannel_logout_uri and backchannel_logout_session_required', async () => {
    const made = await t.post(
      '/api/oauth/clients',
      { name: 'Wiki', type: 'public', redirect_uris: [REDIRECT], backchannel_logout_uri: receiver.url },
      { token: admin },
    );
    expect(made.status).toBe(201);
    expect(made.body.data).toMatchObject({ backchannel_logout_uri: receiver.url, backchannel_logout_session_required: true });
    const id = made.body.data.client_id as string;
    expect((await t.get(`/api/oauth/clients/${id}`, { token: admin })).body.data).toMatchObject({ backchannel_logout_uri: receiver.url });

    const changed = await t.put(`/api/oauth/clients/${id}`, { backchannel_logout_session_required: false }, { token: admin });
    expect(changed.status).toBe(200);
    expect(changed.body.data).toMatchObject({ backchannel_logout_uri: receiver.url, backchannel_logout_session_required: false });
    const removed = await t.put(`/api/oauth/clients/${id}`, { backchannel_logout_uri: null }, { token: admin });
    expect(removed.body.data).toMatchObject({ backchannel_logout_uri: null, backchannel_logout_session_required: false });
    const without = await t.post('/api/oauth/clients', { name: 'Plain', type: 'public', redirect_uris: [REDIRECT] }, { token: admin });
    expect(without.body.data).toMatchObject({ backchannel_logout_uri: null, backchannel_logout_session_required: true });
  });

  it('refuses a URI that is not http(s) or carries a fragment', async () => {
    for (const uri of ['ftp://rp.example.com/logout', 'https://rp.example.com/logout#here', 'not a url']) {
      const res = await t.post(
        '/api/oauth/clients',
        { name: 'Bad', type: 'public', redirect_uris: [REDIRECT], backchannel_logout_uri: uri },
        { token: admin },
      );
      expectError(res, 422, 'VALIDATION_ERROR');
      expect(res.body.error.details).toEqual([expect.objectContaining({ field: 'body.backchannel_logout_uri' })]);
    }
  });
});

describe('one logout token per client and ended session, once', () => {
  it('a logout at the application’s request (RP-initiated logout)', async () => {
    const { config, tokens, browser, idToken } = await signedIn();
    const url = oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: AFTER_LOGOUT });
    const question = await browser.request(url.href);
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(question.html)![1];
    const done = await browser.request('/oauth2/end_session/confirm', { form: { xsrf, logout: 'yes' } });
    expect(done.status).toBe(303);
    await expectOneLogout(app.id, idToken);
    // A logout token is no access token of the API, though signed with the same key for the same person.
    expectError(await t.get('/api/auth/me', { token: receiver.withSid(idToken.sid as string)[0].token }), 401, 'UNAUTHORIZED');
  });

  it('POST /api/auth/logout of the session the sign-in opened', async () => {
    const { tokens, idToken } = await signedIn();
    // The first-party client calls the API with the provider's access token: its principal is that session's.
    expect((await t.post('/api/auth/logout', {}, { token: tokens.access_token })).status).toBe(200);
    await expectOneLogout(app.id, idToken);
  });

  it('POST /api/auth/logout of every session', async () => {
    const { who, idToken } = await signedIn();
    expect((await t.post('/api/auth/logout', { all: true }, { token: who.access })).status).toBe(200);
    await expectOneLogout(app.id, idToken);
  });

  it('DELETE /api/auth/sessions/{id}', async () => {
    const { who, sid, idToken } = await signedIn();
    expect((await t.delete(`/api/auth/sessions/${sid}`, { token: who.access })).status).toBe(204);
    await expectOneLogout(app.id, idToken);
  });

  it('DELETE /api/auth/oauth-grants/{id}', async () => {
    const { who, idToken } = await signedIn();
    const grants = await t.get('/api/auth/oauth-grants', { token: who.access });
    const grant = (grants.body.data as Array<{ id: string; client_id: string }>).find((g) => g.client_id === app.id)!;
    expect((await t.delete(`/api/auth/oauth-grants/${grant.id}`, { token: who.access })).status).toBe(204);
    await expectOneLogout(app.id, idToken);
    // The session's end later owes the client nothing more.
    expect((await t.post('/api/auth/logout', { all: true }, { token: who.access })).status).toBe(200);
    expect(await deliveries(app.id, idToken.sid as string)).toHaveLength(1);
  });

  it('a password change', async () => {
    const { who, idToken } = await signedIn();
    const res = await t.post(
      '/api/auth/change-password',
      { current_password: who.password, new_password: 'another-password-456' },
      { token: who.access },
    );
    expect(res.status).toBe(200);
    await expectOneLogout(app.id, idToken);
  });

  it('a password reset', async () => {
    const { who, idToken } = await signedIn();
    expect((await t.post('/api/auth/forgot-password', { email: who.email })).status).toBe(200);
    const mail = await smtp.waitFor((m) => m.to.includes(who.email) && m.subject === 'Reset your password');
    const reset = await t.post('/api/auth/reset-password', {
      token: linkToken(mail, 'reset-password'),
      new_password: 'a-reset-password-1',
    });
    expect(reset.status).toBe(200);
    await expectOneLogout(app.id, idToken);
  });

  it('disabling the user', async () => {
    const { who, idToken } = await signedIn();
    expect((await t.put(`/api/users/${who.id}`, { is_active: false }, { token: admin })).status).toBe(200);
    await expectOneLogout(app.id, idToken);
  });

  it('deleting the user', async () => {
    const { who, idToken } = await signedIn();
    expect((await t.delete(`/api/users/${who.id}`, { token: admin })).status).toBe(204);
    await expectOneLogout(app.id, idToken);
  });

  it('each client of the session gets its own, with its own sid; a client without a URI gets none', async () => {
    const other = await newClient('Calendar', receiver.url);
    const silent = await newClient('Silent', receiver.url);
    expect((await t.put(`/api/oauth/clients/${silent.id}`, { backchannel_logout_uri: null }, { token: admin })).status).toBe(200);
    const first = await signedIn();
    const second = await signedIn(other, first.who);
    const third = await signedIn(silent, first.who);
    expect(second.idToken.sid).not.toBe(first.idToken.sid);
    expect((await t.post('/api/auth/logout', { all: true }, { token: first.who.access })).status).toBe(200);
    await expectOneLogout(app.id, first.idToken);
    await expectOneLogout(other.id, second.idToken);
    expect(await deliveries(silent.id, third.idToken.sid as string)).toEqual([]);
  });
});

describe('delivery', () => {
  it('retries a receiver that fails until it answers 2xx, with the same jti', async () => {
    const flaky = await startLogoutReceiver();
    try {
      let failures = 2;
      flaky.answer = () => (failures-- > 0 ? 500 : 204);
      const client = await newClient('Flaky', flaky.url);
      const { who, sid, idToken } = await signedIn(client);
      expect((await t.delete(`/api/auth/sessions/${sid}`, { token: who.access })).status).toBe(204);
      await until(async () => (await deliveries(client.id, idToken.sid as string))[0]?.status === 'delivered', 'the delivery');
      const got = flaky.withSid(idToken.sid as string);
      expect(got.map((r) => r.status)).toEqual([500, 500, 204]);
      const jtis = await Promise.all(got.map(async (r) => (await verified(r, client.id, idToken)).jti));
      expect(new Set(jtis).size).toBe(1);
      expect(await deliveries(client.id, idToken.sid as string)).toEqual([expect.objectContaining({ status: 'delivered', attempts: 3 })]);
    } finally {
      await flaky.close();
    }
  });

  it('a receiver that never answers does not slow the logout', async () => {
    const dead = await startLogoutReceiver();
    try {
      dead.answer = () => null;
      const client = await newClient('Dead', dead.url);
      const { config, tokens, browser, idToken } = await signedIn(client);
      const url = oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: AFTER_LOGOUT });
      const question = await browser.request(url.href);
      const xsrf = /name="xsrf" value="([^"]+)"/.exec(question.html)![1];
      const started = Date.now();
      const done = await browser.request('/oauth2/end_session/confirm', { form: { xsrf, logout: 'yes' } });
      expect(done.status).toBe(303);
      expect(Date.now() - started).toBeLessThan(TIMEOUT_MS);
      // The receiver holds the request open: the delivery is still pending, the logout long answered.
      await until(() => dead.withSid(idToken.sid as string).length > 0, 'the receiver to be called');
      expect(await deliveries(client.id, idToken.sid as string)).toEqual([expect.objectContaining({ status: 'pending' })]);
    } finally {
      await dead.close();
    }
  });

  it('a closed port does not slow the logout either; the delivery stays pending for its retries', async () => {
    const port = await freePort();
    const client = await newClient('Gone', `http://127.0.0.1:${port}/backchannel-logout`);
    const { who, sid, idToken } = await signedIn(client);
    const started = Date.now();
    expect((await t.delete(`/api/auth/sessions/${sid}`, { token: who.access })).status).toBe(204);
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS);
    expect(await deliveries(client.id, idToken.sid as string)).toEqual([expect.objectContaining({ status: 'pending' })]);
    await until(async () => (await deliveries(client.id, idToken.sid as string))[0]?.attempts >= 2, 'a retry');
  });
});

describe('with PROVIDER_ALLOW_PRIVATE_URLS=false', () => {
  let strict: TestContext;
  let strictAdmin: string;
  beforeAll(async () => {
    strict = await startTestApp({ PROVIDER_ALLOW_PRIVATE_URLS: 'false', OIDC_REGISTRATION: 'open' });
    strictAdmin = await strict.adminToken();
  });
  afterAll(async () => {
    await strict?.close();
  });

  const create = (uri: string) =>
    strict.post(
      '/api/oauth/clients',
      { name: 'Strict', type: 'public', redirect_uris: [REDIRECT], backchannel_logout_uri: uri },
      { token: strictAdmin },
    );

  it('refuses http and internal addresses, saying which setting allows them', async () => {
    for (const uri of ['http://93.184.216.34/logout', 'https://127.0.0.1/logout', 'https://10.1.2.3/logout', 'https://[::1]/logout']) {
      const res = await create(uri);
      expectError(res, 422, 'VALIDATION_ERROR');
      expect(res.body.error.details).toEqual([
        expect.objectContaining({ field: 'body.backchannel_logout_uri', message: expect.stringContaining('PROVIDER_ALLOW_PRIVATE_URLS') }),
      ]);
    }
    const made = await create('https://93.184.216.34/logout');
    expect(made.status).toBe(201);
    const changed = await strict.put(
      `/api/oauth/clients/${made.body.data.client_id}`,
      { backchannel_logout_uri: 'http://127.0.0.1/logout' },
      { token: strictAdmin },
    );
    expectError(changed, 422, 'VALIDATION_ERROR');
  });

  it('a client that registers itself cannot name one', async () => {
    const res = await fetch(`${strict.baseUrl}/oauth2/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        redirect_uris: ['https://rp.example.com/callback'],
        backchannel_logout_uri: 'https://93.184.216.34/logout',
      }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'invalid_client_metadata' });
  });

  it('allows them when PROVIDER_ALLOW_PRIVATE_URLS=true', async () => {
    const res = await t.post(
      '/api/oauth/clients',
      { name: 'Local', type: 'public', redirect_uris: [REDIRECT], backchannel_logout_uri: 'http://127.0.0.1:9/logout' },
      { token: admin },
    );
    expect(res.status).toBe(201);
  });
});
