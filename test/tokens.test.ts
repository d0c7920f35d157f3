import { randomUUID } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { AuditEventTable } from '../src/audit/audit-repository.js';
import { sha256 } from '../src/sessions/tokens.js';
import { ADMIN, startTestApp, TEST_SECRET, uniqueEmail, type Response, type TestContext } from './support/app.js';
import { expectError } from './support/expect.js';
import { claimsOf } from './support/jwt.js';
import { linkToken, startSmtpServer, type TestSmtpServer } from './support/smtp.js';

// Sessions and tokens other services can trust: a session's absolute lifetime, the issuer,
// audience and age of every token, sign-in only with a verified address when so configured, and
// no API answer kept by a cache.

// jose verifies the issued tokens, as another service would, in jwks.test.ts for every algorithm
// (one test file per worker may import it: jose is ESM only).

const DAY_MS = 24 * 60 * 60 * 1000;
const now = () => Math.floor(Date.now() / 1000);
const UNAUTHORIZED_BODY = { success: false, error: { code: 'UNAUTHORIZED', message: 'Not authenticated' } };
const EXPIRED_BODY = { success: false, error: { code: 'TOKEN_EXPIRED', message: 'Token has expired' } };
const UNVERIFIED_BODY = {
  success: false,
  error: { code: 'FORBIDDEN', message: 'Email address must be verified before signing in; follow the link sent to it' },
};

const auditEvents = (t: TestContext) => t.db.withTables<{ audit_events: AuditEventTable }>();

function expectBody(res: Response, status: number, body: unknown): void {
  expect(res.status).toBe(status);
  expect(res.body).toEqual(body);
  if (status === 401) expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
}

describe('with the default settings', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t?.close());

  const me = (token: string) => t.get('/api/auth/me', { token });
  const refresh = (token: string) => t.post('/api/auth/refresh', { refresh_token: token });
  const session = (id: string) => t.db.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const refreshedEvents = async (sessionId: string) =>
    (await auditEvents(t).selectFrom('audit_events').select('details').where('event_type', '=', 'session.refreshed').execute()).filter(
      (row) => (row.details as { session_id?: string }).session_id === sessionId,
    ).length;
  /** Moves the session's opening back in time: the clock this test controls. */
  const openedAt = (id: string, at: Date) => t.db.updateTable('sessions').set({ created_at: at }).where('id', '=', id).execute();
  /**
   * A token signed with the service's secret, its claims chosen by the test (`iat` now unless given, or
   * left out with `noTimestamp`), under the header `typ` of its `type` (an access token authenticated now).
   */
  const sign = (claims: Record<string, unknown>, options: jwt.SignOptions = {}) =>
    jwt.sign({ jti: randomUUID(), ...(claims.type === 'access' ? { auth_time: now() } : {}), ...claims }, TEST_SECRET, {
      algorithm: 'HS256',
      header: { alg: 'HS256', typ: `${String(claims.type)}+jwt` },
      ...options,
    });

  describe('SESSION_MAX_DAYS: a session ends 30 days after it was opened, however often it is refreshed', () => {
    it('a refresh near the end carries neither the session nor its refresh token past it', async () => {
      const u = await t.register();
      const sid = claimsOf(u.refresh).sid;
      // Opened 30 days ago less an hour: one hour of the session is left, less than the 7 days a refresh gives.
      const opened = new Date(Date.now() - 30 * DAY_MS + 60 * 60 * 1000);
      await openedAt(sid, opened);
      const end = opened.getTime() + 30 * DAY_MS;

      const res = await refresh(u.refresh);
      expect(res.status).toBe(200);
      const next = claimsOf(res.body.data.refresh_token);
      expect(next.exp).toBe(Math.floor(end / 1000));
      expect(next.exp - now()).toBeLessThanOrEqual(3600);
      const row = await session(sid);
      expect(row.expires_at.getTime()).toBe(next.exp * 1000);
      expect(row.refresh_token_hash).toBe(sha256(res.body.data.refresh_token));
      // The access token is the usual 30 minutes: shorter than what is left.
      expect((await me(res.body.data.access_token)).status).toBe(200);
      expect(await refreshedEvents(sid)).toBe(1);

      // The sessions list shows the capped expiry too.
      const listed = await t.get('/api/auth/sessions', { token: res.body.data.access_token });
      expect(listed.body.data.find((s: { id: string }) => s.id === sid).expires_at).toBe(new Date(next.exp * 1000).toISOString());
    });

    it('past the end, refresh is 401 and changes nothing: the session is neither rotated nor taken for stolen', async () => {
      const u = await t.register();
      const sid = claimsOf(u.refresh).sid;
      // Refreshed on its first day, as a client does every half hour.
      const first = await refresh(u.refresh);
      expect(first.status).toBe(200);
      const before = await session(sid);

      // Thirty days and a second later, the refresh token (valid for seven days) is still unexpired.
      await openedAt(sid, new Date(Date.now() - 30 * DAY_MS - 1000));
      expect(claimsOf(first.body.data.refresh_token).exp).toBeGreaterThan(now());
      expectBody(await refresh(first.body.data.refresh_token), 401, UNAUTHORIZED_BODY);

      const after = await session(sid);
      expect(after.refresh_token_hash).toBe(before.refresh_token_hash);
      expect(after.expires_at).toEqual(before.expires_at);
      expect(after.revoked_at).toBeNull();
      expect(await refreshedEvents(sid)).toBe(1);
      const reuse = await auditEvents(t)
        .selectFrom('audit_events')
        .select('id')
        .where('event_type', '=', 'session.refresh_reuse_detected')
        .where('subject_user_id', '=', u.id)
        .execute();
      expect(reuse).toHaveLength(0);

      // Signing in again opens a new session with its own 30 days.
      const login = await t.post('/api/auth/login/json', { email: u.email, password: u.password });
      expect(login.status).toBe(200);
      expect((await refresh(login.body.data.refresh_token)).status).toBe(200);
    });
  });

  describe('iss, aud and age: tokens are verified as other services verify them', () => {
    it('issues tokens with iss (APP_URL by default), aud (account-service by default) and, on access tokens, email_verified', async () => {
      const u = await t.register();
      expect(claimsOf(u.access)).toMatchObject({
        iss: 'http://localhost:8000',
        aud: 'account-service',
        email_verified: false,
        type: 'access',
      });
      expect(claimsOf(u.refresh)).toMatchObject({ iss: 'http://localhost:8000', aud: 'account-service', type: 'refresh' });
      expect(claimsOf(u.refresh)).not.toHaveProperty('email_verified');
      const res = await refresh(u.refresh);
      expect(claimsOf(res.body.data.access_token)).toMatchObject({
        iss: 'http://localhost:8000',
        aud: 'account-service',
        email_verified: false,
      });
      expect(claimsOf(res.body.data.refresh_token)).toMatchObject({ iss: 'http://localhost:8000', aud: 'account-service' });
    });

    it('refuses access tokens signed with its own key for another audience or issuer, or without them (401)', async () => {
      const u = await t.register();
      const c = claimsOf(u.access);
      const claims = { sub: c.sub, email: c.email, type: 'access', sid: c.sid, iss: c.iss, aud: c.aud, iat: now(), exp: now() + 600 };
      // The control: the same claims, signed the same way, are accepted.
      expect((await me(sign(claims))).status).toBe(200);

      const { iss: _iss, ...withoutIss } = claims;
      const { aud: _aud, ...withoutAud } = claims;
      for (const forged of [
        { ...claims, aud: 'billing-service' },
        { ...claims, aud: ['billing-service'] },
        { ...claims, iss: 'https://staging.example.com' },
        { ...claims, iss: 'http://localhost:8000/' },
        withoutIss,
        withoutAud,
      ]) {
        expectBody(await me(sign(forged)), 401, UNAUTHORIZED_BODY);
      }
    });

    it('refuses an access token older than ACCESS_TOKEN_EXPIRE_MINUTES whatever its exp says, one issued in the future, and one without iat', async () => {
      const u = await t.register();
      const c = claimsOf(u.access);
      const claims = { sub: c.sub, email: c.email, type: 'access', sid: c.sid, iss: c.iss, aud: c.aud };

      // Issued 31 minutes ago and valid, by its exp, for a year.
      expectBody(await me(sign({ ...claims, iat: now() - 31 * 60, exp: now() + 365 * 86400 })), 401, EXPIRED_BODY);
      // Issued tomorrow: counted from there, its age would never reach the lifetime until then.
      expectBody(await me(sign({ ...claims, iat: now() + 86400, exp: now() + 86400 + 1800 })), 401, UNAUTHORIZED_BODY);
      expectBody(await me(sign({ ...claims, exp: now() + 600 }, { noTimestamp: true })), 401, UNAUTHORIZED_BODY);

      // 29 minutes old is within its lifetime.
      expect((await me(sign({ ...claims, iat: now() - 29 * 60, exp: now() + 60 }))).status).toBe(200);
    });

    it("refuses a refresh token older than REFRESH_TOKEN_EXPIRE_DAYS, or for another audience or issuer, even as the session's current one", async () => {
      const u = await t.register();
      const c = claimsOf(u.refresh);
      const sid = c.sid;
      const claims = { sub: c.sub, type: 'refresh', sid, iss: c.iss, aud: c.aud };
      /** Makes `token` the session's current refresh token, as if the service had issued it. */
      const current = async (token: string) => {
        await t.db
          .updateTable('sessions')
          .set({ refresh_token_hash: sha256(token) })
          .where('id', '=', sid)
          .execute();
        return token;
      };

      const cases: [Record<string, unknown>, unknown][] = [
        // Issued eight days ago with an exp a month away: older than the 7-day lifetime.
        [{ ...claims, iat: now() - 8 * 86400, exp: now() + 30 * 86400 }, EXPIRED_BODY],
        [{ ...claims, aud: 'billing-service', iat: now(), exp: now() + 3600 }, UNAUTHORIZED_BODY],
        [{ ...claims, iss: 'https://staging.example.com', iat: now(), exp: now() + 3600 }, UNAUTHORIZED_BODY],
      ];
      for (const [forged, body] of cases) {
        const token = await current(sign(forged));
        expectBody(await refresh(token), 401, body);
        // Refused before the session is looked at: not rotated, not revoked.
        const row = await session(sid);
        expect(row.refresh_token_hash).toBe(sha256(token));
        expect(row.revoked_at).toBeNull();
      }
      expect(await refreshedEvents(sid)).toBe(0);

      // The control: six days old, our issuer and audience, is refreshed.
      const good = await current(sign({ ...claims, iat: now() - 6 * 86400, exp: now() + 86400 }));
      expect((await refresh(good)).status).toBe(200);
    });
  });

  describe('Cache-Control: no-store on every /api response', () => {
    const expectNoStore = (res: Response, status: number) => {
      expect(res.status).toBe(status);
      expect(res.headers['cache-control']).toBe('no-store');
    };

    it('on successes, token answers included', async () => {
      const u = await t.register();
      const registered = await t.post('/api/auth/register', { email: uniqueEmail(), password: 'password-123', name: 'Ada' });
      expectNoStore(registered, 201);
      expectNoStore(await t.post('/api/auth/login/json', { email: u.email, password: u.password }), 200);
      expectNoStore(await t.post('/api/auth/login', { username: u.email, password: u.password }, { form: true }), 200);
      expectNoStore(await refresh(registered.body.data.refresh_token), 200);
      expectNoStore(await me(u.access), 200);
      expectNoStore(await t.get('/api/users', { token: await t.adminToken() }), 200);
      const other = await t.post('/api/auth/login/json', { email: u.email, password: u.password });
      expectNoStore(await t.delete(`/api/auth/sessions/${claimsOf(other.body.data.access_token).sid}`, { token: u.access }), 204);
    });

    it('on errors, unknown routes and other methods', async () => {
      expectNoStore(await me('not-a-token'), 401);
      expectNoStore(await t.post('/api/auth/login/json', { email: ADMIN.email, password: 'wrong-password' }), 401);
      expectNoStore(await t.post('/api/auth/login/json', { email: 'not-an-email' }), 422);
      expectNoStore(
        await t.post('/api/auth/login/json', undefined, { raw: '{"email":', headers: { 'Content-Type': 'application/json' } }),
        400,
      );
      expectNoStore(await t.get('/api/users', { token: (await t.register()).access }), 403);
      expectNoStore(await t.get('/api/no-such-thing'), 404);
      expectNoStore(await t.get('/api'), 404);
      expectNoStore(await t.send('DELETE', '/api/auth/login'), 405);
      expectNoStore(await t.send('OPTIONS', '/api/auth/login'), 204);
    });

    it('and not elsewhere: the JWKS stays cacheable, health and docs keep their own', async () => {
      expect((await t.get('/.well-known/jwks.json')).headers['cache-control']).toBe('public, max-age=300');
      expect((await t.get('/health/live')).headers['cache-control']).toBeUndefined();
      expect((await t.get('/apis')).headers['cache-control']).toBeUndefined();
    });
  });
});

describe('REQUIRE_VERIFIED_EMAIL=true', () => {
  const VERIFY_SUBJECT = 'Confirm your e-mail address';
  const RESET_SUBJECT = 'Reset your password';
  let smtp: TestSmtpServer;
  let t: TestContext;
  beforeAll(async () => {
    smtp = await startSmtpServer();
    t = await startTestApp({
      REQUIRE_VERIFIED_EMAIL: 'true',
      SMTP_URL: smtp.url,
      APP_URL: 'https://app.example.test',
      MAIL_POLL_INTERVAL_MS: '100',
    });
  });
  afterAll(async () => {
    await t?.close();
    await smtp?.close();
  });

  const sessionsOf = (userId: number) => t.db.selectFrom('sessions').selectAll().where('user_id', '=', userId).execute();
  const failures = async (userId: number) =>
    (
      await auditEvents(t)
        .selectFrom('audit_events')
        .select('details')
        .where('event_type', '=', 'login.failed')
        .where('subject_user_id', '=', userId)
        .execute()
    ).map((row) => (row.details as { reason: string }).reason);
  const verificationToken = async (email: string) =>
    linkToken(await smtp.waitFor((m) => m.to.includes(email) && m.subject === VERIFY_SUBJECT, 10_000), 'verify-email');
  const loginJson = (email: string, password: string) => t.post('/api/auth/login/json', { email, password });
  const loginForm = (email: string, password: string) => t.post('/api/auth/login', { username: email, password }, { form: true });

  it('registration creates the account and mails the link, but opens no session and hands out no token', async () => {
    const email = uniqueEmail('unverified');
    const res = await t.post('/api/auth/register', { email, password: 'password-123', name: 'Ada Lovelace' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      success: true,
      data: {
        user: {
          id: expect.any(Number),
          email,
          name: 'Ada Lovelace',
          role: 'user',
          is_active: true,
          email_verified: false,
          pending_email: null,
          created_at: expect.any(String),
          updated_at: expect.any(String),
        },
      },
    });
    const userId = res.body.data.user.id as number;
    expect(await sessionsOf(userId)).toEqual([]);
    const registered = await auditEvents(t)
      .selectFrom('audit_events')
      .select('details')
      .where('event_type', '=', 'user.registered')
      .where('subject_user_id', '=', userId)
      .execute();
    expect(registered.map((row) => row.details)).toEqual([{}]);
    expect(await verificationToken(email)).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('refuses sign-in with the right password (403, saying why) until the address is verified; a wrong one is still 401', async () => {
    const email = uniqueEmail('unverified');
    const password = 'password-123';
    const userId = (await t.post('/api/auth/register', { email, password, name: 'Ada' })).body.data.user.id as number;

    expectBody(await loginJson(email, password), 403, UNVERIFIED_BODY);
    expectBody(await loginForm(email, password), 403, UNVERIFIED_BODY);
    expectError(await loginJson(email, 'wrong-password'), 401, 'INVALID_CREDENTIALS');
    expect(await sessionsOf(userId)).toEqual([]);
    expect(await failures(userId)).toEqual(['email_not_verified', 'email_not_verified', 'invalid_credentials']);

    const verified = await t.post('/api/auth/verify-email', { token: await verificationToken(email) });
    expect(verified.status).toBe(200);
    expect(verified.body.data.email_verified).toBe(true);

    const res = await loginJson(email, password);
    expect(res.status).toBe(200);
    expect((await loginForm(email, password)).status).toBe(200);
    expect(await sessionsOf(userId)).toHaveLength(2);
    // The access token says so, for services that check it themselves; its issuer is this APP_URL.
    expect(claimsOf(res.body.data.access_token)).toMatchObject({
      email_verified: true,
      iss: 'https://app.example.test',
      aud: 'account-service',
    });
  });

  it('refuses to refresh a session of an account whose address is no longer verified, and keeps the session for later', async () => {
    const email = uniqueEmail('unverified');
    const password = 'password-123';
    await t.post('/api/auth/register', { email, password, name: 'Ada' });
    await t.post('/api/auth/verify-email', { token: await verificationToken(email) });
    const login = await loginJson(email, password);
    const userId = login.body.data.user.id as number;
    const { sid } = claimsOf(login.body.data.refresh_token);
    const before = await t.db.selectFrom('sessions').selectAll().where('id', '=', sid).executeTakeFirstOrThrow();

    // The address stops being verified (changed by an admin, say).
    await t.db.updateTable('users').set({ email_verified: false }).where('id', '=', userId).execute();
    expectBody(await t.post('/api/auth/refresh', { refresh_token: login.body.data.refresh_token }), 403, UNVERIFIED_BODY);
    const after = await t.db.selectFrom('sessions').selectAll().where('id', '=', sid).executeTakeFirstOrThrow();
    expect(after).toEqual(before);

    // Verified again, the same refresh token works.
    await t.db.updateTable('users').set({ email_verified: true }).where('id', '=', userId).execute();
    expect((await t.post('/api/auth/refresh', { refresh_token: login.body.data.refresh_token })).status).toBe(200);
  });

  it('an account an admin created signs in after a password reset, which verifies the address', async () => {
    const email = uniqueEmail('invited');
    const created = await t.post('/api/users', { email, password: 'password-123', name: 'Invited' }, { token: await t.adminToken() });
    expect(created.status).toBe(201);
    expectBody(await loginJson(email, 'password-123'), 403, UNVERIFIED_BODY);

    expect((await t.post('/api/auth/forgot-password', { email })).status).toBe(200);
    const mail = await smtp.waitFor((m) => m.to.includes(email) && m.subject === RESET_SUBJECT, 10_000);
    expect(
      (await t.post('/api/auth/reset-password', { token: linkToken(mail, 'reset-password'), new_password: 'another-password-456' })).status,
    ).toBe(200);
    expect((await loginJson(email, 'another-password-456')).status).toBe(200);
  });
});
