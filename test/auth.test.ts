import { createHash, randomUUID } from 'node:crypto';
import { verify as bcryptVerify } from '@node-rs/bcrypt';
import jwt from 'jsonwebtoken';
import { sql } from 'kysely';
import { ADMIN, startTestApp, TEST_SECRET, uniqueEmail, type Response, type TestContext } from './support/app.js';
import { expectError, expectJson, expectUnauthorized } from './support/expect.js';
import { claimsOf, type Claims } from './support/jwt.js';

let t: TestContext;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

// ---------------------------------------------------------------------------------------------
// Helpers

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');
const headerOf = (token: string) => (jwt.decode(token, { complete: true }) as jwt.Jwt).header;
const now = () => Math.floor(Date.now() / 1000);
const b64url = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

const EXPIRED_BODY = { success: false, error: { code: 'TOKEN_EXPIRED', message: 'Token has expired' } };
const INVALID_CREDENTIALS_BODY = { success: false, error: { code: 'INVALID_CREDENTIALS', message: 'Invalid email or password' } };

const USER_SHAPE = {
  id: expect.any(Number),
  email: expect.any(String),
  name: expect.any(String),
  role: 'user',
  is_active: true,
  email_verified: false,
  pending_email: null,
  created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/),
  updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/),
};

/** A 401 in the envelope with the bearer challenge. */
function expectExpired(res: Response): void {
  expect(res.status).toBe(401);
  expect(res.body).toEqual(EXPIRED_BODY);
  expect(res.headers['www-authenticate']).toMatch(/^Bearer(\s|$)/);
}

function expectInvalidCredentials(res: Response): void {
  expect(res.status).toBe(401);
  expect(res.body).toEqual(INVALID_CREDENTIALS_BODY);
  expect(res.headers['www-authenticate']).toMatch(/^Bearer(\s|$)/);
}

/** A 422 whose `details` name exactly these fields. */
function expectValidation(res: Response, fields: string[]): void {
  expectError(res, 422, 'VALIDATION_ERROR');
  expect(res.body.error.message).toBe('Request validation failed');
  const details = res.body.error.details as { field: string; message: string }[];
  expect(Array.isArray(details)).toBe(true);
  for (const detail of details) expect(detail).toEqual({ field: expect.any(String), message: expect.any(String) });
  expect([...new Set(details.map((d) => d.field))].sort()).toEqual([...fields].sort());
}

const sessionsOf = (userId: number) =>
  t.db.selectFrom('sessions').selectAll().where('user_id', '=', userId).orderBy('created_at').execute();
const sessionById = (id: string) => t.db.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const userRow = (id: number) => t.db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

const loginJson = (email: string, password: string) => t.post('/api/auth/login/json', { email, password });
const loginForm = (fields: Record<string, string>) => t.post('/api/auth/login', fields, { form: true });
const me = (token: string) => t.get('/api/auth/me', { token });
const refresh = (refreshToken: string) => t.post('/api/auth/refresh', { refresh_token: refreshToken });

/** A token signed with the service's own secret and claims chosen by the test (its issuer and audience unless they say otherwise). */
/** A token as the service signs one of `claims.type`: its header's `typ`, and an access token's `auth_time`. */
function sign(claims: Record<string, unknown>, options: jwt.SignOptions = {}, secret = TEST_SECRET): string {
  const access = claims.type === 'access';
  const payload = {
    jti: randomUUID(),
    iss: t.config.tokens.issuer,
    aud: t.config.tokens.audience,
    ...(access ? { auth_time: now() } : {}),
    ...claims,
  };
  return jwt.sign(payload, secret, {
    algorithm: 'HS256',
    ...options,
    header: { alg: options.algorithm ?? 'HS256', typ: access ? 'access+jwt' : 'refresh+jwt', ...options.header },
  });
}

const VALID = { password: 'password-123', name: 'Ada Lovelace' };

// ---------------------------------------------------------------------------------------------

describe('POST /api/auth/register', () => {
  it('creates the account, opens a session and answers 201 with the user and a token pair', async () => {
    const email = uniqueEmail('reg');
    const res = await t.post('/api/auth/register', { email, ...VALID });
    expect(res.status).toBe(201);
    expectJson(res);
    expect(res.body).toEqual({
      success: true,
      data: {
        user: { ...USER_SHAPE, email, name: 'Ada Lovelace' },
        access_token: expect.any(String),
        refresh_token: expect.any(String),
        token_type: 'bearer',
        expires_in: 1800,
      },
    });
    const { user, access_token, refresh_token } = res.body.data;
    expect(user).not.toHaveProperty('deleted_at');
    expect(JSON.stringify(res.body)).not.toContain(VALID.password);
    expect(access_token).not.toBe(refresh_token);

    const row = await userRow(user.id);
    expect(row.email).toBe(email);
    expect(row.role).toBe('user');
    expect(row.deleted_at).toBeNull();
    expect(new Date(user.created_at).getTime()).toBe(new Date(row.created_at).getTime());
  });

  it('stores a bcrypt hash of the password, never the password', async () => {
    const u = await t.register({ password: 'a-secret-passphrase' });
    const row = await userRow(u.id);
    expect(row.password_hash).not.toContain('a-secret-passphrase');
    expect(row.password_hash).toMatch(/^\$2[aby]\$04\$[./A-Za-z0-9]{53}$/);
    expect(await bcryptVerify('a-secret-passphrase', row.password_hash)).toBe(true);
    expect(await bcryptVerify('another-passphrase', row.password_hash)).toBe(false);
  });

  it('stores one session holding the SHA-256 of the refresh token, never the raw token', async () => {
    const before = Date.now();
    const res = await t.post(
      '/api/auth/register',
      { email: uniqueEmail('sess'), ...VALID },
      { headers: { 'User-Agent': 'auth-test/1.0' } },
    );
    expect(res.status).toBe(201);
    const { user, access_token, refresh_token } = res.body.data;
    const sessions = await sessionsOf(user.id);
    expect(sessions).toHaveLength(1);
    const [session] = sessions;
    expect(session.id).toBe(claimsOf(refresh_token).sid);
    expect(session.id).toBe(claimsOf(access_token).sid);
    expect(session.refresh_token_hash).toBe(sha256(refresh_token));
    expect(session.refresh_token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(session.previous_token_hash).toBeNull();
    expect(session.rotated_at).toBeNull();
    expect(session.revoked_at).toBeNull();
    expect(session.user_agent).toBe('auth-test/1.0');
    expect(session.ip).toMatch(/127\.0\.0\.1|::1/);
    const stored = JSON.stringify(session);
    expect(stored).not.toContain(refresh_token);
    expect(stored).not.toContain(access_token);
    // The session lives as long as the refresh token: 7 days.
    const expiresAt = new Date(session.expires_at).getTime();
    expect(expiresAt).toBe(claimsOf(refresh_token).exp * 1000);
    expect(Math.abs(expiresAt - (before + 7 * 86400 * 1000))).toBeLessThan(60_000);
  });

  it('trims and lower-cases the e-mail', async () => {
    const email = uniqueEmail('case');
    const res = await t.post('/api/auth/register', { email: `  ${email.toUpperCase()}  `, ...VALID });
    expect(res.status).toBe(201);
    expect(res.body.data.user.email).toBe(email);
    expect((await userRow(res.body.data.user.id)).email).toBe(email);
    expect(claimsOf(res.body.data.access_token).email).toBe(email);
  });

  it('trims the name', async () => {
    const res = await t.post('/api/auth/register', { email: uniqueEmail('name'), password: VALID.password, name: '  Grace Hopper \t' });
    expect(res.status).toBe(201);
    expect(res.body.data.user.name).toBe('Grace Hopper');
    expect((await userRow(res.body.data.user.id)).name).toBe('Grace Hopper');
  });

  it('accepts a password of exactly 72 bytes of UTF-8, and it logs in', async () => {
    const password = 'é'.repeat(36); // 72 bytes
    const u = await t.register({ password });
    expect((await loginJson(u.email, password)).status).toBe(200);
  });

  it('answers 409 CONFLICT for an e-mail already registered, in any case, and creates nothing', async () => {
    const u = await t.register();
    const before = await t.db
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();

    const same = await t.post('/api/auth/register', { email: u.email, ...VALID });
    expectError(same, 409, 'CONFLICT');

    const upper = await t.post('/api/auth/register', { email: ` ${u.email.toUpperCase()} `, ...VALID });
    expectError(upper, 409, 'CONFLICT');

    const after = await t.db
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(after.n)).toBe(Number(before.n));
    expect(await sessionsOf(u.id)).toHaveLength(1);
  });

  it('answers 409 CONFLICT for the e-mail of a soft-deleted user', async () => {
    const u = await t.register();
    const del = await t.delete(`/api/users/${u.id}`, { token: u.access });
    expect(del.status).toBe(204);
    expect((await userRow(u.id)).deleted_at).not.toBeNull();
    const res = await t.post('/api/auth/register', { email: u.email, ...VALID });
    expectError(res, 409, 'CONFLICT');
  });

  describe('422 VALIDATION_ERROR', () => {
    it('names every missing field', async () => {
      expectValidation(await t.post('/api/auth/register', {}), ['body.email', 'body.password', 'body.name']);
      expectValidation(await t.post('/api/auth/register', { email: uniqueEmail() }), ['body.password', 'body.name']);
    });

    it('treats a request without a body as an empty one', async () => {
      expectValidation(await t.post('/api/auth/register'), ['body.email', 'body.password', 'body.name']);
    });

    it.each(['not-an-email', 'a@', '@example.com', 'two@@example.com', 'spaces in@example.com', ''])(
      'refuses the e-mail %j',
      async (email) => {
        expectValidation(await t.post('/api/auth/register', { email, ...VALID }), ['body.email']);
      },
    );

    it('refuses a password shorter than 8 characters', async () => {
      const res = await t.post('/api/auth/register', { email: uniqueEmail(), password: 'short12', name: 'X' });
      expectValidation(res, ['body.password']);
    });

    it('refuses a password of more than 72 bytes even when it has fewer than 72 characters', async () => {
      const email = uniqueEmail('long');
      const password = 'é'.repeat(40); // 40 characters, 80 bytes
      expect(password.length).toBe(40);
      const res = await t.post('/api/auth/register', { email, password, name: 'X' });
      expectValidation(res, ['body.password']);
      const row = await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst();
      expect(row).toBeUndefined();
    });

    it('refuses a password of more than 72 characters', async () => {
      const res = await t.post('/api/auth/register', { email: uniqueEmail(), password: 'x'.repeat(73), name: 'X' });
      expectValidation(res, ['body.password']);
    });

    it.each(['', '   ', '\t\n'])('refuses the blank name %j', async (name) => {
      const res = await t.post('/api/auth/register', { email: uniqueEmail(), password: VALID.password, name });
      expectValidation(res, ['body.name']);
    });

    it('refuses a name longer than 100 characters', async () => {
      const res = await t.post('/api/auth/register', { email: uniqueEmail(), password: VALID.password, name: 'n'.repeat(101) });
      expectValidation(res, ['body.name']);
    });

    it('refuses unknown fields such as a role', async () => {
      const email = uniqueEmail('extra');
      const res = await t.post('/api/auth/register', { email, ...VALID, role: 'admin' });
      expectValidation(res, ['body.role']);
      expect(res.body.error.details).toEqual([{ field: 'body.role', message: 'is not allowed' }]);
      expect(await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst()).toBeUndefined();
    });

    it('refuses fields of the wrong type', async () => {
      const res = await t.post('/api/auth/register', { email: uniqueEmail(), password: 12345678, name: ['x'] });
      expect(res.status).toBe(422);
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual(expect.arrayContaining(['body.password', 'body.name']));
    });

    it('refuses a JSON array as the body', async () => {
      const res = await t.post('/api/auth/register', [{ email: uniqueEmail(), ...VALID }]);
      expectError(res, 422, 'VALIDATION_ERROR');
    });
  });

  describe('400 BAD_REQUEST', () => {
    it('for malformed JSON', async () => {
      const res = await t.post('/api/auth/register', undefined, {
        raw: `{"email": "${uniqueEmail()}", "password": `,
        headers: { 'Content-Type': 'application/json' },
      });
      expectError(res, 400, 'BAD_REQUEST');
    });

    it('for a text/plain body, even one holding valid JSON', async () => {
      const email = uniqueEmail('text');
      const res = await t.post('/api/auth/register', undefined, {
        raw: JSON.stringify({ email, ...VALID }),
        headers: { 'Content-Type': 'text/plain' },
      });
      expectError(res, 400, 'BAD_REQUEST');
      expect(await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst()).toBeUndefined();
    });

    it('for a form body', async () => {
      const res = await t.post('/api/auth/register', { email: uniqueEmail(), ...VALID }, { form: true });
      expectError(res, 400, 'BAD_REQUEST');
    });
  });
});

describe('JWT claims', () => {
  it('access token: iss, aud, sub, email, email_verified, type access, 30 minutes, jti, sid, amr and aal, signed HS256 with the secret', async () => {
    const u = await t.register();
    const verified = jwt.verify(u.access, TEST_SECRET, { algorithms: ['HS256'] }) as Claims;
    expect(headerOf(u.access).alg).toBe('HS256');
    expect(verified).toEqual({
      iss: 'http://localhost:8000',
      aud: 'account-service',
      sub: String(u.id),
      email: u.email,
      email_verified: false,
      type: 'access',
      iat: expect.any(Number),
      exp: expect.any(Number),
      jti: expect.stringMatching(/^[0-9a-f-]{36}$/),
      sid: expect.stringMatching(/^[0-9a-f-]{36}$/),
      amr: ['pwd'],
      aal: 'aal1',
      auth_time: expect.any(Number),
    });
    expect(typeof verified.sub).toBe('string');
    expect(verified.exp - verified.iat).toBe(1800);
    expect(Math.abs(verified.iat - now())).toBeLessThan(60);
  });

  it('refresh token: iss, aud, sub, type refresh, 7 days, jti and the same sid, no e-mail', async () => {
    const u = await t.register();
    const access = claimsOf(u.access);
    const verified = jwt.verify(u.refresh, TEST_SECRET, { algorithms: ['HS256'] }) as Claims;
    expect(headerOf(u.refresh).alg).toBe('HS256');
    expect(verified).toEqual({
      iss: 'http://localhost:8000',
      aud: 'account-service',
      sub: String(u.id),
      type: 'refresh',
      iat: expect.any(Number),
      exp: expect.any(Number),
      jti: expect.any(String),
      sid: access.sid,
    });
    expect(verified).not.toHaveProperty('email');
    expect(verified.exp - verified.iat).toBe(7 * 24 * 3600);
    expect(verified.jti).not.toBe(access.jti);
  });

  it('each registration and login has its own session id and token ids', async () => {
    const u = await t.register();
    const first = await loginJson(u.email, u.password);
    const second = await loginJson(u.email, u.password);
    const sids = [u.access, first.body.data.access_token, second.body.data.access_token].map((tok) => claimsOf(tok).sid);
    expect(new Set(sids).size).toBe(3);
    const jtis = [u.access, u.refresh, first.body.data.access_token, first.body.data.refresh_token].map((tok) => claimsOf(tok).jti);
    expect(new Set(jtis).size).toBe(4);
    const sessions = await sessionsOf(u.id);
    expect(sessions.map((s) => s.id).sort()).toEqual([...sids].sort());
  });
});

describe('POST /api/auth/login (form)', () => {
  it('answers 200 with the token fields in data and at the top level', async () => {
    const u = await t.register();
    const res = await loginForm({ username: u.email, password: u.password });
    expect(res.status).toBe(200);
    expectJson(res);
    const pair = { access_token: expect.any(String), refresh_token: expect.any(String), token_type: 'bearer', expires_in: 1800 };
    expect(res.body).toEqual({ success: true, data: pair, ...pair });
    expect(res.body.access_token).toBe(res.body.data.access_token);
    expect(res.body.refresh_token).toBe(res.body.data.refresh_token);
    expect(claimsOf(res.body.access_token).sub).toBe(String(u.id));

    const who = await me(res.body.access_token);
    expect(who.status).toBe(200);
    expect(who.body.data.id).toBe(u.id);

    const sessions = await sessionsOf(u.id);
    expect(sessions).toHaveLength(2);
    const session = sessions.find((s) => s.id === claimsOf(res.body.refresh_token).sid)!;
    expect(session.refresh_token_hash).toBe(sha256(res.body.refresh_token));
  });

  it('accepts and ignores grant_type, scope, client_id and client_secret', async () => {
    const u = await t.register();
    const res = await loginForm({
      grant_type: 'password',
      username: u.email,
      password: u.password,
      scope: 'read write',
      client_id: 'swagger',
      client_secret: 's3cret',
    });
    expect(res.status).toBe(200);
    expect(res.body.token_type).toBe('bearer');
    expect(res.body.data.token_type).toBe('bearer');
  });

  it('takes the e-mail in any case and with surrounding white space', async () => {
    const u = await t.register();
    const res = await loginForm({ username: `  ${u.email.toUpperCase()} `, password: u.password });
    expect(res.status).toBe(200);
    expect(claimsOf(res.body.access_token).email).toBe(u.email);
  });

  it('answers 400 BAD_REQUEST for a JSON body', async () => {
    const u = await t.register();
    const res = await t.post('/api/auth/login', { username: u.email, password: u.password });
    expectError(res, 400, 'BAD_REQUEST');
    expect(await sessionsOf(u.id)).toHaveLength(1);
  });

  it('answers 422 for missing fields and unknown fields', async () => {
    expectValidation(await t.post('/api/auth/login'), ['body.username', 'body.password']);
    expectValidation(await loginForm({ username: 'someone@example.com' }), ['body.password']);
    expectValidation(await loginForm({ username: 'someone@example.com', password: 'password-123', remember: 'yes' }), ['body.remember']);
  });

  it('answers the same 401 INVALID_CREDENTIALS for a wrong password, an unknown e-mail and a deleted user', async () => {
    const u = await t.register();
    const gone = await t.register();
    expect((await t.delete(`/api/users/${gone.id}`, { token: gone.access })).status).toBe(204);

    const wrong = await loginForm({ username: u.email, password: 'wrong-password' });
    const unknown = await loginForm({ username: uniqueEmail('nobody'), password: u.password });
    const deleted = await loginForm({ username: gone.email, password: gone.password });
    for (const res of [wrong, unknown, deleted]) expectInvalidCredentials(res);
    expect(unknown.body).toEqual(wrong.body);
    expect(deleted.body).toEqual(wrong.body);
    expect(await sessionsOf(u.id)).toHaveLength(1);
  });

  it('answers 401 for a password over 72 bytes instead of comparing a truncated one', async () => {
    const password = 'p'.repeat(72);
    const u = await t.register({ password });
    expect((await loginForm({ username: u.email, password })).status).toBe(200);
    expectInvalidCredentials(await loginForm({ username: u.email, password: `${password}extra` }));
  });

  it('answers 403 FORBIDDEN for a disabled account with the right password', async () => {
    const u = await t.register();
    const admin = await t.adminToken();
    const put = await t.put(`/api/users/${u.id}`, { is_active: false }, { token: admin });
    expect(put.status).toBe(200);
    expect(put.body.data.is_active).toBe(false);

    const res = await loginForm({ username: u.email, password: u.password });
    expectError(res, 403, 'FORBIDDEN');
    expect(await sessionsOf(u.id)).toHaveLength(1);
    // A wrong password still says nothing about the account.
    expectInvalidCredentials(await loginForm({ username: u.email, password: 'wrong-password' }));
  });
});

describe('POST /api/auth/login/json', () => {
  it('answers 200 with the token pair and the user', async () => {
    const u = await t.register({ name: 'Json Login' });
    const res = await loginJson(u.email, u.password);
    expect(res.status).toBe(200);
    expectJson(res);
    expect(res.body).toEqual({
      success: true,
      data: {
        access_token: expect.any(String),
        refresh_token: expect.any(String),
        token_type: 'bearer',
        expires_in: 1800,
        user: { ...USER_SHAPE, id: u.id, email: u.email, name: 'Json Login' },
      },
    });
    const access = claimsOf(res.body.data.access_token);
    const refreshClaims = claimsOf(res.body.data.refresh_token);
    expect(access.type).toBe('access');
    expect(refreshClaims.type).toBe('refresh');
    expect(access.sid).toBe(refreshClaims.sid);
    const session = await sessionById(access.sid);
    expect(session.user_id).toBe(u.id);
    expect(session.refresh_token_hash).toBe(sha256(res.body.data.refresh_token));
  });

  it('logs in with the e-mail in upper case', async () => {
    const u = await t.register();
    const res = await loginJson(` ${u.email.toUpperCase()} `, u.password);
    expect(res.status).toBe(200);
    expect(res.body.data.user.email).toBe(u.email);
  });

  it('shows deleted_at to an admin logging in', async () => {
    const res = await loginJson(ADMIN.email, ADMIN.password);
    expect(res.status).toBe(200);
    expect(res.body.data.user).toEqual({ ...USER_SHAPE, role: 'admin', email: ADMIN.email, email_verified: true, deleted_at: null });
  });

  it('answers the same 401 INVALID_CREDENTIALS for a wrong password, an unknown e-mail and a deleted user', async () => {
    const u = await t.register();
    const gone = await t.register();
    expect((await t.delete(`/api/users/${gone.id}`, { token: gone.access })).status).toBe(204);

    const wrong = await loginJson(u.email, 'wrong-password');
    const wrongCase = await loginJson(u.email, u.password.toUpperCase());
    const unknown = await loginJson(uniqueEmail('nobody'), u.password);
    const deleted = await loginJson(gone.email, gone.password);
    for (const res of [wrong, wrongCase, unknown, deleted]) expectInvalidCredentials(res);
    expect(await sessionsOf(u.id)).toHaveLength(1);
  });

  it('answers 403 FORBIDDEN for a disabled account, and logs in again once re-enabled', async () => {
    const u = await t.register();
    const admin = await t.adminToken();
    expect((await t.put(`/api/users/${u.id}`, { is_active: false }, { token: admin })).status).toBe(200);
    expectError(await loginJson(u.email, u.password), 403, 'FORBIDDEN');
    expectInvalidCredentials(await loginJson(u.email, 'wrong-password'));

    expect((await t.put(`/api/users/${u.id}`, { is_active: true }, { token: admin })).status).toBe(200);
    expect((await loginJson(u.email, u.password)).status).toBe(200);
  });

  it('answers 422 for missing, empty or unknown fields', async () => {
    expectValidation(await t.post('/api/auth/login/json', {}), ['body.email', 'body.password']);
    expectValidation(await t.post('/api/auth/login/json', { email: '', password: '' }), ['body.email', 'body.password']);
    expectValidation(await t.post('/api/auth/login/json', { email: 'a@example.com', password: 'password-123', username: 'x' }), [
      'body.username',
    ]);
  });

  it('answers 400 for a form body and for malformed JSON', async () => {
    const u = await t.register();
    expectError(await t.post('/api/auth/login/json', { email: u.email, password: u.password }, { form: true }), 400, 'BAD_REQUEST');
    expectError(
      await t.post('/api/auth/login/json', undefined, { raw: '{"email":', headers: { 'Content-Type': 'application/json' } }),
      400,
      'BAD_REQUEST',
    );
  });
});

describe('GET /api/auth/me', () => {
  it('answers 200 with the current user', async () => {
    const u = await t.register({ name: 'Current User' });
    const res = await me(u.access);
    expect(res.status).toBe(200);
    expectJson(res);
    expect(res.body).toEqual({ success: true, data: { ...USER_SHAPE, id: u.id, email: u.email, name: 'Current User' } });
  });

  it('keeps answering while a migration adds a column to users, as in a rolling deploy', async () => {
    const u = await t.register({ name: 'Rolling Deploy' });
    // Enough requests at once to use every pooled connection before and after the change.
    const burst = () => Promise.all(Array.from({ length: 12 }, () => me(u.access)));
    for (const res of await burst()) expect(res.status).toBe(200);
    await sql`alter table users add column nickname text`.execute(t.db);
    try {
      for (const res of await burst()) {
        expect(res.status).toBe(200);
        expect(res.body.data).toEqual({ ...USER_SHAPE, id: u.id, email: u.email, name: 'Rolling Deploy' });
      }
    } finally {
      await sql`alter table users drop column nickname`.execute(t.db);
    }
    expect((await me(u.access)).status).toBe(200);
  });

  (process.env.TEST_DATABASE_KIND === 'postgres' ? it : it.skip)(
    'prepares the token check on each pooled connection, and not with DATABASE_PREPARED_STATEMENTS=false',
    async () => {
      // The app's own pool runs this query too, on one of the connections the burst used.
      const preparedOn = async (ctx: TestContext) =>
        (await sql<{ name: string }>`select name from pg_prepared_statements`.execute(ctx.db)).rows.map((row) => row.name);
      const burst = (ctx: TestContext, token: string) => Promise.all(Array.from({ length: 12 }, () => ctx.get('/api/auth/me', { token })));

      const u = await t.register();
      for (const res of await burst(t, u.access)) expect(res.status).toBe(200);
      expect(await preparedOn(t)).toContain('authenticated_user');

      const unprepared = await startTestApp({ DATABASE_PREPARED_STATEMENTS: 'false' });
      try {
        const v = await unprepared.register();
        for (const res of await burst(unprepared, v.access)) expect(res.status).toBe(200);
        expect(await preparedOn(unprepared)).toEqual([]);
      } finally {
        await unprepared.close();
      }
    },
  );

  it('accepts the scheme name in any case', async () => {
    const u = await t.register();
    const res = await t.get('/api/auth/me', { headers: { Authorization: `bearer ${u.access}` } });
    expect(res.status).toBe(200);
    expect(res.body.data.id).toBe(u.id);
  });

  it('answers 401 UNAUTHORIZED without an Authorization header', async () => {
    expectUnauthorized(await t.get('/api/auth/me'));
  });

  it.each([['Basic dXNlcjpwYXNz'], ['Bearer'], ['Bearer '], ['Token abc.def.ghi'], ['Bearer a b']])(
    'answers 401 UNAUTHORIZED for the malformed header %j',
    async (header) => {
      expectUnauthorized(await t.get('/api/auth/me', { headers: { Authorization: header } }));
    },
  );

  it('answers 401 UNAUTHORIZED for a garbage token', async () => {
    expectUnauthorized(await me('not-a-jwt'));
    expectUnauthorized(await me('aaa.bbb.ccc'));
  });

  it('answers 401 UNAUTHORIZED for a token signed with another secret', async () => {
    const u = await t.register();
    const c = claimsOf(u.access);
    const forged = sign(
      { sub: c.sub, email: c.email, type: 'access', sid: c.sid, exp: now() + 600 },
      {},
      'another-secret-that-is-long-enough-for-hs256',
    );
    expectUnauthorized(await me(forged));
  });

  it('answers 401 UNAUTHORIZED for a token signed with another algorithm', async () => {
    const u = await t.register();
    const c = claimsOf(u.access);
    const hs512 = sign({ sub: c.sub, email: c.email, type: 'access', sid: c.sid, exp: now() + 600 }, { algorithm: 'HS512' });
    expectUnauthorized(await me(hs512));
  });

  it('answers 401 UNAUTHORIZED for an unsigned token (alg none)', async () => {
    const u = await t.register();
    const c = claimsOf(u.access);
    const unsigned = `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({ ...c, exp: now() + 600 })}.`;
    expectUnauthorized(await me(unsigned));
  });

  it('answers 401 UNAUTHORIZED for a refresh token used as an access token', async () => {
    const u = await t.register();
    expectUnauthorized(await me(u.refresh));
  });

  it('accepts a well-signed token for a live session (control for the cases below)', async () => {
    const u = await t.register();
    const c = claimsOf(u.access);
    const token = sign({ sub: c.sub, email: c.email, type: 'access', sid: c.sid, iat: now(), exp: now() + 600 });
    const res = await me(token);
    expect(res.status).toBe(200);
    expect(res.body.data.id).toBe(u.id);
  });

  it('answers 401 TOKEN_EXPIRED for an expired but well-signed token of a real session', async () => {
    const u = await t.register();
    const c = claimsOf(u.access);
    const expired = sign({ sub: c.sub, email: c.email, type: 'access', sid: c.sid, iat: now() - 3600, exp: now() - 60 });
    expectExpired(await me(expired));
  });

  it('answers 401 UNAUTHORIZED for a well-signed token of an unknown session', async () => {
    const u = await t.register();
    const token = sign({ sub: String(u.id), email: u.email, type: 'access', sid: randomUUID(), exp: now() + 600 });
    expectUnauthorized(await me(token));
  });

  it("answers 401 UNAUTHORIZED for a well-signed token naming another user's session", async () => {
    const a = await t.register();
    const b = await t.register();
    const token = sign({ sub: String(b.id), email: b.email, type: 'access', sid: claimsOf(a.access).sid, exp: now() + 600 });
    expectUnauthorized(await me(token));
  });

  it.each([
    ['a numeric sub', { sub: 1 }],
    ['a non-uuid sid', { sid: 'session-1' }],
    ['no type', { type: undefined }],
  ])('answers 401 UNAUTHORIZED for a well-signed token with %s', async (_label, override) => {
    const u = await t.register();
    const c = claimsOf(u.access);
    const claims: Record<string, unknown> = { sub: c.sub, email: c.email, type: 'access', sid: c.sid, exp: now() + 600, ...override };
    for (const key of Object.keys(claims)) if (claims[key] === undefined) delete claims[key];
    expectUnauthorized(await me(sign(claims)));
  });

  it('answers 401 UNAUTHORIZED for the token of a deleted user', async () => {
    const u = await t.register();
    // Deleted directly, so that the session itself stays live: the user check alone must refuse.
    await t.db.updateTable('users').set({ deleted_at: new Date() }).where('id', '=', u.id).execute();
    expect((await sessionById(claimsOf(u.access).sid)).revoked_at).toBeNull();
    expectUnauthorized(await me(u.access));
  });

  it('answers 401 UNAUTHORIZED for the token of a user deleted through the API', async () => {
    const u = await t.register();
    const second = await loginJson(u.email, u.password);
    expect((await t.delete(`/api/users/${u.id}`, { token: u.access })).status).toBe(204);
    expectUnauthorized(await me(u.access));
    expectUnauthorized(await me(second.body.data.access_token));
  });

  it('answers 401 UNAUTHORIZED for the token of a disabled user', async () => {
    const u = await t.register();
    expect((await me(u.access)).status).toBe(200);
    const admin = await t.adminToken();
    expect((await t.put(`/api/users/${u.id}`, { is_active: false }, { token: admin })).status).toBe(200);
    expectUnauthorized(await me(u.access));
    expectUnauthorized(await refresh(u.refresh));
  });
});

describe('POST /api/auth/refresh', () => {
  it('answers 200 with a new pair of the same session, rotating the stored hash', async () => {
    const u = await t.register();
    const sid = claimsOf(u.refresh).sid;
    const res = await refresh(u.refresh);
    expect(res.status).toBe(200);
    expectJson(res);
    // The token fields stand at the top level too, as the OAuth2 token URL answers (RFC 6749 §5.1).
    const pair = { access_token: expect.any(String), refresh_token: expect.any(String), token_type: 'bearer', expires_in: 1800 };
    expect(res.body).toEqual({ success: true, data: pair, ...pair });
    expect(res.body.access_token).toBe(res.body.data.access_token);
    expect(res.body.refresh_token).toBe(res.body.data.refresh_token);
    const { access_token, refresh_token } = res.body.data;
    expect(access_token).not.toBe(u.access);
    expect(refresh_token).not.toBe(u.refresh);

    const access = claimsOf(access_token);
    const next = claimsOf(refresh_token);
    expect(access).toMatchObject({ sub: String(u.id), email: u.email, type: 'access', sid });
    expect(access.exp - access.iat).toBe(1800);
    expect(next).toMatchObject({ sub: String(u.id), type: 'refresh', sid });
    expect(next).not.toHaveProperty('email');

    const session = await sessionById(sid);
    expect(session.refresh_token_hash).toBe(sha256(refresh_token));
    expect(session.previous_token_hash).toBe(sha256(u.refresh));
    expect(session.rotated_at).not.toBeNull();
    expect(session.revoked_at).toBeNull();
    expect(await sessionsOf(u.id)).toHaveLength(1);

    const who = await me(access_token);
    expect(who.status).toBe(200);
    expect(who.body.data.id).toBe(u.id);

    // The new refresh token rotates in turn.
    const again = await refresh(refresh_token);
    expect(again.status).toBe(200);
    expect(again.body.data.refresh_token).not.toBe(refresh_token);
  });

  it('accepts the replaced refresh token again within the grace period', async () => {
    const u = await t.register();
    const first = await refresh(u.refresh);
    expect(first.status).toBe(200);
    const second = await refresh(u.refresh);
    expect(second.status).toBe(200);
    // No second rotation: the answer carries the token the first one made.
    expect(second.body.data.refresh_token).toBe(first.body.data.refresh_token);
    expect(second.body.data.access_token).not.toBe(first.body.data.access_token);
    expect(claimsOf(second.body.data.refresh_token).sid).toBe(claimsOf(u.refresh).sid);
    expect((await me(second.body.data.access_token)).status).toBe(200);
    expect((await sessionById(claimsOf(u.refresh).sid)).revoked_at).toBeNull();
    // The token handed out for the reuse rotates like the current one.
    const third = await refresh(second.body.data.refresh_token);
    expect(third.status).toBe(200);
  });

  it('hands both tabs the one current token when they refresh the same token within the grace period', async () => {
    // Two tabs refresh the same token at once; both go on with the token of the one rotation.
    const u = await t.register();
    const sid = claimsOf(u.refresh).sid;
    const tabA = await refresh(u.refresh);
    const tabB = await refresh(u.refresh);
    expect([tabA.status, tabB.status]).toEqual([200, 200]);
    expect(tabB.body.data.refresh_token).toBe(tabA.body.data.refresh_token);
    const session = await sessionById(sid);
    expect(session.refresh_token_hash).toBe(sha256(tabA.body.data.refresh_token));
    expect(session.previous_token_hash).toBe(sha256(u.refresh));
    // Kept sealed, never in clear.
    expect(session.refresh_token_sealed).not.toContain(tabA.body.data.refresh_token);

    // The next round races the same way: one rotation, and the other tab gets its token.
    const [nextA, nextB] = [await refresh(tabA.body.data.refresh_token), await refresh(tabB.body.data.refresh_token)];
    expect([nextA.status, nextB.status]).toEqual([200, 200]);
    expect(nextB.body.data.refresh_token).toBe(nextA.body.data.refresh_token);
    expect((await sessionById(sid)).revoked_at).toBeNull();
    // Past the grace period the token of the earlier round is a replaced token past its use.
    await t.db
      .updateTable('sessions')
      .set({ rotated_at: new Date(Date.now() - 3600_000) })
      .where('id', '=', sid)
      .execute();
    expectUnauthorized(await refresh(tabB.body.data.refresh_token));
    expect((await sessionById(sid)).revoked_at).not.toBeNull();
  });

  it('revokes the whole session when the replaced token comes back after the grace period', async () => {
    const u = await t.register();
    const sid = claimsOf(u.refresh).sid;
    const first = await refresh(u.refresh);
    expect(first.status).toBe(200);
    const newest = first.body.data;
    await t.db
      .updateTable('sessions')
      .set({ rotated_at: new Date(Date.now() - 3600_000) })
      .where('id', '=', sid)
      .execute();

    expectUnauthorized(await refresh(u.refresh));
    expect((await sessionById(sid)).revoked_at).not.toBeNull();

    expectUnauthorized(await refresh(newest.refresh_token));
    expectUnauthorized(await me(newest.access_token));
    expectUnauthorized(await me(u.access));
  });

  it('leaves the other sessions of the user alone when one is revoked for reuse', async () => {
    const u = await t.register();
    const other = await loginJson(u.email, u.password);
    const sid = claimsOf(u.refresh).sid;
    expect((await refresh(u.refresh)).status).toBe(200);
    await t.db
      .updateTable('sessions')
      .set({ rotated_at: new Date(Date.now() - 3600_000) })
      .where('id', '=', sid)
      .execute();
    expectUnauthorized(await refresh(u.refresh));
    expect((await me(other.body.data.access_token)).status).toBe(200);
    expect((await refresh(other.body.data.refresh_token)).status).toBe(200);
  });

  it("answers 401 UNAUTHORIZED for a refresh token that was never the session's", async () => {
    const u = await t.register();
    const c = claimsOf(u.refresh);
    const stray = sign({ sub: c.sub, type: 'refresh', sid: c.sid, iat: now(), exp: now() + 3600 });
    expectUnauthorized(await refresh(stray));
  });

  it('answers 401 UNAUTHORIZED for an access token presented as a refresh token', async () => {
    const u = await t.register();
    expectUnauthorized(await refresh(u.access));
    expect((await refresh(u.refresh)).status).toBe(200);
  });

  it('answers 401 UNAUTHORIZED for garbage, a foreign signature and an unknown session', async () => {
    const u = await t.register();
    const c = claimsOf(u.refresh);
    expectUnauthorized(await refresh('not-a-jwt'));
    expectUnauthorized(
      await refresh(
        sign({ sub: c.sub, type: 'refresh', sid: c.sid, exp: now() + 600 }, {}, 'another-secret-that-is-long-enough-for-hs256'),
      ),
    );
    expectUnauthorized(await refresh(sign({ sub: c.sub, type: 'refresh', sid: randomUUID(), exp: now() + 600 })));
  });

  it('answers 401 TOKEN_EXPIRED for an expired refresh token', async () => {
    const u = await t.register();
    const c = claimsOf(u.refresh);
    const expired = sign({ sub: c.sub, type: 'refresh', sid: c.sid, iat: now() - 8 * 86400, exp: now() - 60 });
    expectExpired(await refresh(expired));
  });

  it('answers 401 UNAUTHORIZED for the refresh token of a deleted user', async () => {
    const u = await t.register();
    await t.db.updateTable('users').set({ deleted_at: new Date() }).where('id', '=', u.id).execute();
    expectUnauthorized(await refresh(u.refresh));
  });

  it('answers 422 for a missing, empty or mistyped refresh_token and for unknown fields', async () => {
    expectValidation(await t.post('/api/auth/refresh', {}), ['body.refresh_token']);
    expectValidation(await t.post('/api/auth/refresh'), ['body.refresh_token']);
    expectValidation(await t.post('/api/auth/refresh', { refresh_token: '' }), ['body.refresh_token']);
    expectValidation(await t.post('/api/auth/refresh', { refresh_token: 42 }), ['body.refresh_token']);
    const u = await t.register();
    expectValidation(await t.post('/api/auth/refresh', { refresh_token: u.refresh, access_token: u.access }), ['body.access_token']);
  });

  describe('with REFRESH_REUSE_GRACE_SECONDS=0', () => {
    let strict: TestContext;
    beforeAll(async () => {
      strict = await startTestApp({ REFRESH_REUSE_GRACE_SECONDS: '0' });
    });
    afterAll(() => strict.close());

    it('revokes the session as soon as a replaced refresh token is presented again', async () => {
      expect(strict.config.sessions.refreshReuseGraceSeconds).toBe(0);
      const u = await strict.register();
      const first = await strict.post('/api/auth/refresh', { refresh_token: u.refresh });
      expect(first.status).toBe(200);
      expectUnauthorized(await strict.post('/api/auth/refresh', { refresh_token: u.refresh }));

      const session = await strict.db
        .selectFrom('sessions')
        .selectAll()
        .where('id', '=', claimsOf(u.refresh).sid)
        .executeTakeFirstOrThrow();
      expect(session.revoked_at).not.toBeNull();
      expectUnauthorized(await strict.post('/api/auth/refresh', { refresh_token: first.body.data.refresh_token }));
      expectUnauthorized(await strict.get('/api/auth/me', { token: first.body.data.access_token }));
    });
  });
});

describe('POST /api/auth/logout', () => {
  it('revokes the session of the token: its access and refresh tokens fail at once', async () => {
    const u = await t.register();
    const sid = claimsOf(u.access).sid;
    const res = await t.post('/api/auth/logout', undefined, { token: u.access });
    expect(res.status).toBe(200);
    expectJson(res);
    expect(res.body).toEqual({ success: true, data: { message: expect.any(String) } });
    expect(res.body.data.message.length).toBeGreaterThan(0);
    expect((await sessionById(sid)).revoked_at).not.toBeNull();

    expectUnauthorized(await me(u.access));
    expectUnauthorized(await refresh(u.refresh));
    expectUnauthorized(await t.post('/api/auth/logout', undefined, { token: u.access }));
  });

  it('leaves the other sessions of the user working', async () => {
    const u = await t.register();
    const other = await loginJson(u.email, u.password);
    expect(other.status).toBe(200);
    const res = await t.post('/api/auth/logout', { all: false }, { token: u.access });
    expect(res.status).toBe(200);
    expectUnauthorized(await me(u.access));

    expect((await me(other.body.data.access_token)).status).toBe(200);
    const rotated = await refresh(other.body.data.refresh_token);
    expect(rotated.status).toBe(200);
    const sessions = await sessionsOf(u.id);
    expect(sessions.filter((s) => s.revoked_at === null).map((s) => s.id)).toEqual([claimsOf(other.body.data.access_token).sid]);
  });

  it('with {"all": true} revokes every session of the user and no one else\'s', async () => {
    const u = await t.register();
    const second = await loginJson(u.email, u.password);
    const third = await loginForm({ username: u.email, password: u.password });
    const bystander = await t.register();

    const res = await t.post('/api/auth/logout', { all: true }, { token: second.body.data.access_token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { message: expect.any(String) } });

    const sessions = await sessionsOf(u.id);
    expect(sessions).toHaveLength(3);
    for (const s of sessions) expect(s.revoked_at).not.toBeNull();

    for (const token of [u.access, second.body.data.access_token, third.body.access_token]) expectUnauthorized(await me(token));
    for (const token of [u.refresh, second.body.data.refresh_token, third.body.refresh_token]) expectUnauthorized(await refresh(token));

    expect((await me(bystander.access)).status).toBe(200);
    // Logging in again opens a fresh session.
    const again = await loginJson(u.email, u.password);
    expect(again.status).toBe(200);
    expect((await me(again.body.data.access_token)).status).toBe(200);
  });

  it('accepts an empty JSON object', async () => {
    const u = await t.register();
    const res = await t.post('/api/auth/logout', {}, { token: u.access });
    expect(res.status).toBe(200);
    expectUnauthorized(await me(u.access));
  });

  it('answers 401 UNAUTHORIZED without a token, with a refresh token, and with an expired token', async () => {
    const u = await t.register();
    expectUnauthorized(await t.post('/api/auth/logout'));
    expectUnauthorized(await t.post('/api/auth/logout', { all: true }));
    expectUnauthorized(await t.post('/api/auth/logout', undefined, { token: u.refresh }));
    const c = claimsOf(u.access);
    expectExpired(
      await t.post('/api/auth/logout', undefined, {
        token: sign({ sub: c.sub, email: c.email, type: 'access', sid: c.sid, iat: now() - 3600, exp: now() - 1 }),
      }),
    );
    expect((await sessionById(c.sid)).revoked_at).toBeNull();
    expect((await me(u.access)).status).toBe(200);
  });

  it('answers 422 for an unknown field or a mistyped all, and revokes nothing', async () => {
    const u = await t.register();
    expectValidation(await t.post('/api/auth/logout', { everything: true }, { token: u.access }), ['body.everything']);
    expectValidation(await t.post('/api/auth/logout', { all: 'maybe' }, { token: u.access }), ['body.all']);
    expect((await me(u.access)).status).toBe(200);
  });
});

describe('account operations: authentication and validation come first', () => {
  let u: Awaited<ReturnType<TestContext['register']>>;
  beforeAll(async () => {
    u = await t.register();
  });

  it('POST /api/auth/change-password: 401 without a token, 422 for a bad body', async () => {
    const body = { current_password: u.password, new_password: 'another-password-1' };
    expectUnauthorized(await t.post('/api/auth/change-password', body));
    expectValidation(await t.post('/api/auth/change-password', {}, { token: u.access }), ['body.current_password', 'body.new_password']);
    expectValidation(
      await t.post('/api/auth/change-password', { current_password: u.password, new_password: 'short' }, { token: u.access }),
      ['body.new_password'],
    );
    const res = await t.post('/api/auth/change-password', body, { token: u.access });
    expect(res.status).toBe(200);
    expectJson(res);
  });

  it('POST /api/auth/forgot-password: 422 for a bad body', async () => {
    expectValidation(await t.post('/api/auth/forgot-password', {}), ['body.email']);
    expectValidation(await t.post('/api/auth/forgot-password', { email: 'nope' }), ['body.email']);
    expect((await t.post('/api/auth/forgot-password', { email: u.email })).status).toBe(200);
  });

  it('POST /api/auth/reset-password: 422 for a bad body, 400 INVALID_TOKEN for an unknown token', async () => {
    expectValidation(await t.post('/api/auth/reset-password', {}), ['body.token', 'body.new_password']);
    const res = await t.post('/api/auth/reset-password', { token: 'abcdefghijklmnop', new_password: 'another-password-1' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_TOKEN');
  });

  it('POST /api/auth/verify-email: 422 for a bad body, 400 INVALID_TOKEN for an unknown token', async () => {
    expectValidation(await t.post('/api/auth/verify-email', {}), ['body.token']);
    const res = await t.post('/api/auth/verify-email', { token: 'abcdefghijklmnop' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_TOKEN');
  });

  it('POST /api/auth/verify-email/resend: 401 without a token', async () => {
    expectUnauthorized(await t.post('/api/auth/verify-email/resend'));
    expect((await t.post('/api/auth/verify-email/resend', undefined, { token: u.access })).status).toBe(200);
  });

  it('GET /api/auth/sessions: 401 without a token or with a refresh token', async () => {
    expectUnauthorized(await t.get('/api/auth/sessions'));
    expectUnauthorized(await t.get('/api/auth/sessions', { token: u.refresh }));
    expect((await t.get('/api/auth/sessions', { token: u.access })).status).toBe(200);
  });

  it('DELETE /api/auth/sessions/{id}: 401 without a token, 422 for a non-uuid id, 404 for an unknown one', async () => {
    const sid = claimsOf(u.access).sid;
    expectUnauthorized(await t.delete(`/api/auth/sessions/${sid}`));
    expectValidation(await t.delete('/api/auth/sessions/not-a-uuid', { token: u.access }), ['path.id']);
    const res = await t.delete(`/api/auth/sessions/${randomUUID()}`, { token: u.access });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('NOT_FOUND');
    expect((await sessionById(sid)).revoked_at).toBeNull();
  });
});

describe('generic HTTP behaviour', () => {
  it('answers 404 NOT_FOUND in the envelope for an unknown route', async () => {
    for (const res of [await t.get('/api/auth/nothing-here'), await t.post('/api/auth/login/xml', {}), await t.get('/nope')]) {
      expectError(res, 404, 'NOT_FOUND');
    }
  });

  it('answers 405 METHOD_NOT_ALLOWED with an Allow header for a known path and another method', async () => {
    const res = await t.get('/api/auth/register');
    expectError(res, 405, 'METHOD_NOT_ALLOWED');
    expect(res.headers.allow.split(/,\s*/)).toContain('POST');
    expect(res.headers.allow.split(/,\s*/)).not.toContain('GET');

    const del = await t.delete('/api/auth/me');
    expectError(del, 405, 'METHOD_NOT_ALLOWED');
    expect(del.headers.allow.split(/,\s*/)).toContain('GET');

    const put = await t.put('/api/auth/refresh', { refresh_token: 'x' });
    expectError(put, 405, 'METHOD_NOT_ALLOWED');
    expect(put.headers.allow).toContain('POST');
  });

  it('echoes X-Request-Id when sent', async () => {
    const res = await t.get('/api/auth/me', { headers: { 'X-Request-Id': 'req-abc.123:4' } });
    expect(res.status).toBe(401);
    expect(res.headers['x-request-id']).toBe('req-abc.123:4');
  });

  it('generates an X-Request-Id when none (or an unusable one) is sent', async () => {
    const a = await t.post('/api/auth/login/json', { email: uniqueEmail(), password: 'whatever-1' });
    const b = await t.post('/api/auth/login/json', { email: uniqueEmail(), password: 'whatever-1' });
    expect(a.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(b.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);

    const bad = await t.get('/api/auth/me', { headers: { 'X-Request-Id': 'has spaces <script>' } });
    expect(bad.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});
