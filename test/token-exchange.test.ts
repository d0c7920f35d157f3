import jwt from 'jsonwebtoken';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { loadConfig } from '../src/config/index.js';
import { startTestApp, TEST_SECRET, type RegisteredUser, type TestContext } from './support/app.js';
import { expectError, expectUnauthorized } from './support/expect.js';
import { REDIRECT, signInThroughProvider } from './support/relying-party.js';
import { freePort } from './support/net.js';
import { startSmtpServer, type TestSmtpServer } from './support/smtp.js';

// Token exchange (RFC 8693): an admin acts as a user for support, through a real OAuth client
// library (openid-client) at the provider's token endpoint.

type OpenIdClient = typeof import('openid-client');

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const MAIL_ENV = { MAIL_POLL_INTERVAL_MS: '100', MAIL_RETRY_BASE_MS: '200' };

interface Rig {
  t: TestContext;
  oidc: OpenIdClient;
  adminToken: string;
  /** A confidential client an admin created with the token-exchange grant. */
  exchanger: { id: string; secret: string };
}

async function createClient(t: TestContext, adminToken: string, grantTypes: string[]): Promise<{ id: string; secret: string }> {
  const created = await t.post(
    '/api/oauth/clients',
    { name: 'Support desk', type: 'confidential', grant_types: grantTypes },
    { token: adminToken },
  );
  expect(created.status).toBe(201);
  return { id: created.body.data.client_id, secret: created.body.data.client_secret };
}

async function startRig(env: Record<string, string>): Promise<Rig> {
  const oidc = await import('openid-client');
  // The issuer is APP_URL: the app listens where APP_URL says, for the sign-in on the hosted pages.
  const port = await freePort();
  const t = await startTestApp({ IMPERSONATION_ENABLED: 'true', APP_URL: `http://127.0.0.1:${port}`, ...env }, { port });
  const adminToken = await t.adminToken();
  const exchanger = await createClient(t, adminToken, [TOKEN_EXCHANGE]);
  return { t, oidc, adminToken, exchanger };
}

/** The token endpoint's answer to an exchange by `client`, through openid-client. */
async function exchange(rig: Rig, client: { id: string; secret: string }, subjectToken: string, requestedSubject: string | number) {
  const { oidc, t } = rig;
  const config = new oidc.Configuration(
    { issuer: t.config.tokens.issuer, token_endpoint: `${t.baseUrl}/oauth2/token` },
    client.id,
    client.secret,
  );
  oidc.allowInsecureRequests(config);
  return oidc.genericGrantRequest(config, TOKEN_EXCHANGE, {
    subject_token: subjectToken,
    subject_token_type: ACCESS_TOKEN_TYPE,
    requested_subject: String(requestedSubject),
  });
}

/** The OAuth error code of a refused exchange. */
async function refusal(answer: Promise<unknown>): Promise<string> {
  try {
    await answer;
  } catch (error) {
    return (error as { error?: string }).error ?? String(error);
  }
  throw new Error('the exchange was not refused');
}

describe('token exchange', () => {
  let rig: Rig;
  let smtp: TestSmtpServer;
  let user: RegisteredUser;
  let adminId: number;
  beforeAll(async () => {
    smtp = await startSmtpServer();
    rig = await startRig({ ...MAIL_ENV, SMTP_URL: smtp.url, IMPERSONATION_NOTICE: 'true' });
    adminId = Number(decodeJwt(rig.adminToken).sub);
  });
  beforeEach(async () => {
    user = await rig.t.register();
  });
  afterAll(async () => {
    await rig?.t.close();
    await smtp?.close();
  });

  it('gives an admin an access token of the user that names the admin, for 15 minutes, without a refresh token', async () => {
    const answer = await exchange(rig, rig.exchanger, rig.adminToken, user.id);
    expect(answer).toMatchObject({ issued_token_type: ACCESS_TOKEN_TYPE, token_type: 'bearer', expires_in: 900 });
    expect(answer.refresh_token).toBeUndefined();
    expect(decodeProtectedHeader(answer.access_token).typ).toBe('access+jwt');
    const claims = decodeJwt(answer.access_token);
    expect(claims).toMatchObject({ sub: String(user.id), act: { sub: String(adminId) } });
    expect(claims.exp! - claims.iat!).toBe(900);

    const me = await rig.t.get('/api/auth/me', { token: answer.access_token });
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ id: user.id, email: user.email });
  });

  it('expires after IMPERSONATION_TOKEN_MINUTES, whatever its exp says', async () => {
    const { access_token: token } = await exchange(rig, rig.exchanger, rig.adminToken, user.id);
    const claims = decodeJwt(token);
    // The same claims, issued 16 minutes ago with an exp an hour on, signed with the service's key.
    const iat = Math.floor(Date.now() / 1000) - 16 * 60;
    const aged = jwt.sign({ ...claims, iat, exp: iat + 3600 }, TEST_SECRET, {
      algorithm: 'HS256',
      header: { alg: 'HS256', typ: 'access+jwt' },
    });
    expectError(await rig.t.get('/api/auth/me', { token: aged }), 401, 'TOKEN_EXPIRED');
    const fresh = jwt.sign({ ...claims, iat: iat + 2 * 60, exp: iat + 3600 }, TEST_SECRET, {
      algorithm: 'HS256',
      header: { alg: 'HS256', typ: 'access+jwt' },
    });
    expect((await rig.t.get('/api/auth/me', { token: fresh })).status).toBe(200);
  });

  it('is audited: impersonation.started, and what is done with the token names the admin', async () => {
    const { access_token: token } = await exchange(rig, rig.exchanger, rig.adminToken, user.id);
    const started = await rig.t.get(`/api/audit-events?event_type=impersonation.started&user_id=${user.id}`, { token: rig.adminToken });
    expect(started.status).toBe(200);
    expect(started.body.data).toEqual([
      expect.objectContaining({
        event_type: 'impersonation.started',
        actor_user_id: adminId,
        subject_user_id: user.id,
        details: expect.objectContaining({ client_id: rig.exchanger.id, minutes: 15 }),
      }),
    ]);

    const renamed = await rig.t.put(`/api/users/${user.id}`, { name: 'Renamed by support' }, { token });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data.name).toBe('Renamed by support');
    const updated = await rig.t.get(`/api/audit-events?event_type=user.updated&user_id=${user.id}`, { token: rig.adminToken });
    expect(updated.body.data).toEqual([
      expect.objectContaining({
        actor_user_id: adminId,
        subject_user_id: user.id,
        details: expect.objectContaining({ impersonated: true, fields: ['name'] }),
      }),
    ]);
  });

  it("takes the provider's access token of an admin's sign-in on the hosted pages as the subject token", async () => {
    const created = await rig.t.post(
      '/api/oauth/clients',
      {
        name: 'Support console',
        type: 'confidential',
        redirect_uris: [REDIRECT],
        grant_types: ['authorization_code', 'refresh_token', TOKEN_EXCHANGE],
        first_party: true,
      },
      { token: rig.adminToken },
    );
    expect(created.status).toBe(201);
    const app = { id: created.body.data.client_id as string, secret: created.body.data.client_secret as string };
    const admin = { email: 'admin@example.com', password: 'admin-password-1', access: rig.adminToken };
    const { tokens } = await signInThroughProvider(rig.oidc, rig.t, app, admin);
    expect(tokens.access_token).not.toContain('.');
    const answer = await exchange(rig, app, tokens.access_token, user.id);
    expect(decodeJwt(answer.access_token)).toMatchObject({ sub: String(user.id), act: { sub: String(adminId) } });
    expect((await rig.t.get('/api/auth/me', { token: answer.access_token })).body.data.id).toBe(user.id);
  });

  it('refuses credential changes with 403 FORBIDDEN, while reads work', async () => {
    const { access_token: token } = await exchange(rig, rig.exchanger, rig.adminToken, user.id);
    const attempts = [
      await rig.t.post(
        '/api/auth/change-password',
        { current_password: user.password, new_password: 'another-long-passphrase' },
        { token },
      ),
      await rig.t.post('/api/auth/api-keys', { name: 'Backdoor' }, { token }),
      await rig.t.post('/api/auth/mfa/totp', { current_password: user.password }, { token }),
    ];
    for (const attempt of attempts) expectError(attempt, 403, 'FORBIDDEN');
    expect((await rig.t.get('/api/auth/me', { token })).status).toBe(200);
    expect((await rig.t.get('/api/auth/organizations', { token })).status).toBe(200);
    expect((await rig.t.get(`/api/users/${user.id}`, { token })).status).toBe(200);
    // Nothing changed: the user's own password still signs them in, and no key was made.
    expect((await rig.t.post('/api/auth/login/json', { email: user.email, password: user.password })).status).toBe(200);
    expect((await rig.t.get('/api/auth/api-keys', { token: user.access })).body.data).toEqual([]);
  });

  it('tells the user by mail (IMPERSONATION_NOTICE)', async () => {
    await exchange(rig, rig.exchanger, rig.adminToken, user.id);
    const mail = await smtp.waitFor((m) => m.to.includes(user.email) && m.subject === 'An administrator is acting as you');
    expect(mail.text).toContain('15 minutes');
  });

  it("refuses a non-admin's subject token with access_denied, and writes nothing", async () => {
    const other = await rig.t.register();
    expect(await refusal(exchange(rig, rig.exchanger, other.access, user.id))).toBe('access_denied');
    const started = await rig.t.get(`/api/audit-events?event_type=impersonation.started&user_id=${user.id}`, { token: rig.adminToken });
    expect(started.body.data).toEqual([]);
  });

  it('refuses a subject token that is not live, and an unknown, disabled or deleted user, with invalid_grant', async () => {
    expect(await refusal(exchange(rig, rig.exchanger, 'not-a-token', user.id))).toBe('invalid_grant');
    expect(await refusal(exchange(rig, rig.exchanger, user.refresh, user.id))).toBe('invalid_grant');
    expect(await refusal(exchange(rig, rig.exchanger, rig.adminToken, 2147483000))).toBe('invalid_grant');
    // An impersonation token is no subject token for another exchange.
    const { access_token: token } = await exchange(rig, rig.exchanger, rig.adminToken, user.id);
    const other = await rig.t.register();
    expect(await refusal(exchange(rig, rig.exchanger, token, other.id))).toBe('invalid_grant');

    const disabled = await rig.t.register();
    expect((await rig.t.put(`/api/users/${disabled.id}`, { is_active: false }, { token: rig.adminToken })).status).toBe(200);
    expect(await refusal(exchange(rig, rig.exchanger, rig.adminToken, disabled.id))).toBe('invalid_grant');
    const deleted = await rig.t.register();
    expect((await rig.t.delete(`/api/users/${deleted.id}`, { token: rig.adminToken })).status).toBe(204);
    expect(await refusal(exchange(rig, rig.exchanger, rig.adminToken, deleted.id))).toBe('invalid_grant');
  });

  it('refuses a client without the grant', async () => {
    const other = await createClient(rig.t, rig.adminToken, ['client_credentials']);
    expect(await refusal(exchange(rig, other, rig.adminToken, user.id))).toBe('unauthorized_client');
  });

  it('stops working when the admin signs out', async () => {
    const login = await rig.t.post('/api/auth/login/json', { email: 'admin@example.com', password: 'admin-password-1' });
    const adminSession = login.body.data.access_token as string;
    const { access_token: token } = await exchange(rig, rig.exchanger, adminSession, user.id);
    expect((await rig.t.get('/api/auth/me', { token })).status).toBe(200);
    expect((await rig.t.post('/api/auth/logout', {}, { token: adminSession })).status).toBe(200);
    expectUnauthorized(await rig.t.get('/api/auth/me', { token }));
  });

  it('stops working when the user is disabled', async () => {
    const { access_token: token } = await exchange(rig, rig.exchanger, rig.adminToken, user.id);
    expect((await rig.t.put(`/api/users/${user.id}`, { is_active: false }, { token: rig.adminToken })).status).toBe(200);
    expectUnauthorized(await rig.t.get('/api/auth/me', { token }));
  });

  it('is advertised in discovery', async () => {
    const metadata = await rig.t.get('/.well-known/openid-configuration');
    expect(metadata.body.grant_types_supported).toContain(TOKEN_EXCHANGE);
  });
});

describe('token exchange, off (the default)', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t?.close());

  it('is not advertised, and no client may be given the grant', async () => {
    const metadata = await t.get('/.well-known/openid-configuration');
    expect(metadata.body.grant_types_supported).not.toContain(TOKEN_EXCHANGE);
    const created = await t.post(
      '/api/oauth/clients',
      { name: 'Support desk', type: 'confidential', grant_types: [TOKEN_EXCHANGE] },
      { token: await t.adminToken() },
    );
    expectError(created, 422, 'VALIDATION_ERROR');
  });
});

describe('IMPERSONATION_TOKEN_MINUTES', () => {
  it('is 15 by default, 1 to 60', () => {
    expect(loadConfig({}).tokens.impersonationTokenMinutes).toBe(15);
    expect(loadConfig({ IMPERSONATION_TOKEN_MINUTES: '5' }).tokens.impersonationTokenMinutes).toBe(5);
    for (const value of ['0', '61', 'soon'])
      expect(() => loadConfig({ IMPERSONATION_TOKEN_MINUTES: value })).toThrow(/IMPERSONATION_TOKEN_MINUTES/);
  });
});
