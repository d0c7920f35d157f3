import { randomBytes } from 'node:crypto';
import { verify } from '@node-rs/bcrypt';
import { sql } from 'kysely';
import { createApp } from '../src/app.js';
import { loadConfig } from '../src/config/index.js';
import type { UserRow } from '../src/db/types.js';
import { createLogger } from '../src/logger.js';
import { ADMIN, TEST_SECRET, startTestApp, uniqueEmail, type RegisteredUser, type Response, type TestContext } from './support/app.js';
import { expectUnauthorized } from './support/expect.js';

const USER_KEYS = ['created_at', 'email', 'email_verified', 'id', 'is_active', 'name', 'pending_email', 'role', 'updated_at'];
const ADMIN_VIEW_KEYS = [...USER_KEYS, 'deleted_at'].sort();
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const MAX_ID = 2147483647;

/** A lower-case token no other user of the suite carries in its name or e-mail. */
const marker = (prefix: string) => `${prefix}${randomBytes(4).toString('hex')}`;

let t: TestContext;
let admin: string;
let adminId: number;

beforeAll(async () => {
  t = await startTestApp();
  admin = await t.adminToken();
  adminId = (await rowByEmail(ADMIN.email)).id;
});
afterAll(() => t.close());

function rowByEmail(email: string): Promise<UserRow> {
  return t.db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirstOrThrow();
}

function row(id: number): Promise<UserRow> {
  return t.db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

function sessionsOf(userId: number) {
  return t.db.selectFrom('sessions').selectAll().where('user_id', '=', userId).orderBy('created_at').execute();
}

function expectError(res: Response, status: number, code: string): void {
  expect(res.status).toBe(status);
  expect(res.body.success).toBe(false);
  expect(res.body.error.code).toBe(code);
  expect(typeof res.body.error.message).toBe('string');
  if (code !== 'VALIDATION_ERROR') expect(res.body.error.details).toBeUndefined();
  if (status === 401) expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
}

/** A 422 whose details name exactly these fields (in any order). */
function expectInvalid(res: Response, fields: string[]): void {
  expectError(res, 422, 'VALIDATION_ERROR');
  expect(Array.isArray(res.body.error.details)).toBe(true);
  for (const detail of res.body.error.details) expect(typeof detail.message).toBe('string');
  expect([...new Set(res.body.error.details.map((d: { field: string }) => d.field))].sort()).toEqual([...fields].sort());
}

/** Whether an access token still opens a protected route. */
async function tokenWorks(token: string): Promise<boolean> {
  const res = await t.get('/api/auth/me', { token });
  if (res.status === 200) return true;
  expectUnauthorized(res);
  return false;
}

function login(email: string, password: string): Promise<Response> {
  return t.post('/api/auth/login/json', { email, password });
}

async function createUser(fields: Record<string, unknown> = {}): Promise<any> {
  const res = await t.post(
    '/api/users',
    { name: 'Created User', email: uniqueEmail('created'), password: 'password-123', ...fields },
    { token: admin },
  );
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data;
}

function list(params: Record<string, string | number>, token = admin): Promise<Response> {
  const query = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)])).toString();
  return t.get(`/api/users${query ? `?${query}` : ''}`, { token });
}

/** The user object a user sees of themself, from their database row. */
function selfView(r: UserRow) {
  return {
    id: r.id,
    email: r.email,
    name: r.name,
    role: r.role,
    is_active: r.is_active,
    email_verified: r.email_verified,
    pending_email: r.pending_email,
    created_at: new Date(r.created_at).toISOString(),
    updated_at: new Date(r.updated_at).toISOString(),
  };
}

function adminView(r: UserRow) {
  return { ...selfView(r), deleted_at: r.deleted_at === null ? null : new Date(r.deleted_at).toISOString() };
}

describe('admin bootstrap', () => {
  it('creates the ADMIN_EMAIL account as an active, verified admin that can log in', async () => {
    const r = await rowByEmail(ADMIN.email);
    expect(r).toMatchObject({ role: 'admin', is_active: true, email_verified: true, deleted_at: null });
    expect(r.password_hash).not.toContain(ADMIN.password);
    expect(await verify(ADMIN.password, r.password_hash)).toBe(true);

    const res = await login(ADMIN.email, ADMIN.password);
    expect(res.status).toBe(200);
    expect(res.body.data.user).toEqual(adminView(r));
  });

  it('the admin sees their own record with deleted_at', async () => {
    const res = await t.get(`/api/users/${adminId}`, { token: admin });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: adminView(await row(adminId)) });
  });

  it('starting again leaves an existing admin account as it is (same e-mail in another case, another password)', async () => {
    await t.db.updateTable('users').set({ name: 'Renamed Admin', email_verified: false }).where('id', '=', adminId).execute();
    const before = await row(adminId);
    const restart = { ADMIN_EMAIL: ` ${ADMIN.email.toUpperCase()} `, ADMIN_PASSWORD: 'a-different-password' };
    try {
      if (t.kind === 'postgres') {
        // A second process start over the same database.
        const config = loadConfig({
          SECRET_KEY: TEST_SECRET,
          BCRYPT_COST: '4',
          LOG_LEVEL: 'silent',
          DATABASE_URL: t.config.database.url!,
          ...restart,
        });
        const second = await createApp(config, { logger: createLogger({ level: 'silent' }) });
        await second.close();
      } else {
        // The in-memory database cannot be reopened: run the start-up step itself on it.
        expect(await t.app.services.users.ensureAdmin(restart.ADMIN_EMAIL, restart.ADMIN_PASSWORD)).toBeUndefined();
      }
      const admins = await t.db.selectFrom('users').selectAll().where('role', '=', 'admin').execute();
      expect(admins).toEqual([before]);
      const ok = await login(ADMIN.email, ADMIN.password);
      expect(ok.status).toBe(200);
      expect(ok.body.data.user).toMatchObject({ id: adminId, name: 'Renamed Admin', email_verified: false });
      expectError(await login(ADMIN.email, 'a-different-password'), 401, 'INVALID_CREDENTIALS');
    } finally {
      await t.db.updateTable('users').set({ name: 'Administrator', email_verified: true }).where('id', '=', adminId).execute();
    }
  });
});

describe('permissions', () => {
  let alice: RegisteredUser;
  let bob: RegisteredUser;
  let deleted: any;

  beforeAll(async () => {
    alice = await t.register({ name: 'Alice Perm' });
    bob = await t.register({ name: 'Bob Perm' });
    deleted = await createUser();
    expect((await t.delete(`/api/users/${deleted.id}`, { token: admin })).status).toBe(204);
  });

  it('without a token every user operation is 401 UNAUTHORIZED', async () => {
    const id = bob.id;
    const calls: Array<() => Promise<Response>> = [
      () => t.get('/api/users'),
      () => t.get('/api/users?page=1&per_page=5'),
      () => t.post('/api/users', { name: 'X', email: uniqueEmail(), password: 'password-123' }),
      () => t.get(`/api/users/${id}`),
      () => t.put(`/api/users/${id}`, { name: 'Nope' }),
      () => t.delete(`/api/users/${id}`),
      () => t.post(`/api/users/${deleted.id}/restore`),
    ];
    for (const call of calls) expectUnauthorized(await call());
    // A malformed token or another scheme is no authentication either.
    expectUnauthorized(await t.get('/api/users', { token: 'not-a-jwt' }));
    expectUnauthorized(await t.get(`/api/users/${id}`, { headers: { Authorization: `Basic ${admin}` } }));
    // Nothing changed.
    expect(await row(id)).toMatchObject({ name: 'Bob Perm', deleted_at: null });
    expect((await row(deleted.id)).deleted_at).not.toBeNull();
  });

  it('a plain user may not list, create or restore users', async () => {
    expectError(await list({}, alice.access), 403, 'FORBIDDEN');
    expectError(await list({ cursor: 0 }, alice.access), 403, 'FORBIDDEN');
    const email = uniqueEmail('forbidden');
    expectError(await t.post('/api/users', { name: 'Sneaky', email, password: 'password-123' }, { token: alice.access }), 403, 'FORBIDDEN');
    expect(await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst()).toBeUndefined();
    expectError(await t.post(`/api/users/${deleted.id}/restore`, undefined, { token: alice.access }), 403, 'FORBIDDEN');
    expect((await row(deleted.id)).deleted_at).not.toBeNull();
  });

  it("a plain user may not read, update or delete another user's record", async () => {
    const before = await row(bob.id);
    expectError(await t.get(`/api/users/${bob.id}`, { token: alice.access }), 403, 'FORBIDDEN');
    expectError(await t.get(`/api/users/${adminId}`, { token: alice.access }), 403, 'FORBIDDEN');
    expectError(await t.put(`/api/users/${bob.id}`, { name: 'Hacked' }, { token: alice.access }), 403, 'FORBIDDEN');
    expectError(await t.put(`/api/users/${bob.id}`, { password: 'hacked-password' }, { token: alice.access }), 403, 'FORBIDDEN');
    expectError(await t.delete(`/api/users/${bob.id}`, { token: alice.access }), 403, 'FORBIDDEN');
    expect(await row(bob.id)).toEqual(before);
    expect(await tokenWorks(bob.access)).toBe(true);
  });

  it('a plain user may not set their own role or is_active', async () => {
    const before = await row(alice.id);
    expectError(await t.put(`/api/users/${alice.id}`, { role: 'admin' }, { token: alice.access }), 403, 'FORBIDDEN');
    expectError(await t.put(`/api/users/${alice.id}`, { role: 'user' }, { token: alice.access }), 403, 'FORBIDDEN');
    expectError(await t.put(`/api/users/${alice.id}`, { is_active: false }, { token: alice.access }), 403, 'FORBIDDEN');
    expectError(await t.put(`/api/users/${alice.id}`, { name: 'Alice Admin', role: 'admin' }, { token: alice.access }), 403, 'FORBIDDEN');
    expect(await row(alice.id)).toEqual(before);
    expect(before.role).toBe('user');
  });

  it('a user reads their own record, without deleted_at', async () => {
    const res = await t.get(`/api/users/${alice.id}`, { token: alice.access });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.data).sort()).toEqual(USER_KEYS);
    expect(res.body).toEqual({ success: true, data: selfView(await row(alice.id)) });
    expect(res.body.data).toMatchObject({
      id: alice.id,
      email: alice.email,
      name: 'Alice Perm',
      role: 'user',
      is_active: true,
      email_verified: false,
    });
    expect(res.body.data.created_at).toMatch(ISO);
    expect(res.body.data.updated_at).toMatch(ISO);
  });

  it('an admin reads any record, with deleted_at null', async () => {
    const res = await t.get(`/api/users/${bob.id}`, { token: admin });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.data).sort()).toEqual(ADMIN_VIEW_KEYS);
    expect(res.body.data.deleted_at).toBeNull();
    expect(res.body).toEqual({ success: true, data: adminView(await row(bob.id)) });
  });

  it('no response carries a password or its hash', async () => {
    const r = await row(alice.id);
    const responses = [
      await t.get(`/api/users/${alice.id}`, { token: alice.access }),
      await t.get(`/api/users/${alice.id}`, { token: admin }),
      await list({ q: alice.email }),
      await list({ q: alice.email, cursor: 0 }),
      await t.put(`/api/users/${alice.id}`, { name: 'Alice Perm' }, { token: alice.access }),
    ];
    for (const res of responses) {
      expect(res.status).toBe(200);
      const text = JSON.stringify(res.body);
      expect(text).not.toMatch(/password/i);
      expect(text).not.toContain(r.password_hash);
      expect(text).not.toContain('$2');
    }
  });

  it('a user updates their own name, e-mail (pending until confirmed) and password, with their current password', async () => {
    const email = uniqueEmail('self-update');
    const res = await t.put(
      `/api/users/${bob.id}`,
      { name: 'Bob Renamed', email, password: 'bob-new-password', current_password: bob.password },
      { token: bob.access },
    );
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.data).sort()).toEqual(USER_KEYS);
    expect(res.body.data).toMatchObject({
      id: bob.id,
      name: 'Bob Renamed',
      email: bob.email,
      pending_email: email,
      role: 'user',
      is_active: true,
    });
    expect(res.body).toEqual({ success: true, data: selfView(await row(bob.id)) });
    expect((await login(bob.email, 'bob-new-password')).status).toBe(200);
    bob = { ...bob, password: 'bob-new-password' };
  });

  it('a user deletes their own record', async () => {
    const carol = await t.register({ name: 'Carol Perm' });
    const res = await t.delete(`/api/users/${carol.id}`, { token: carol.access });
    expect(res.status).toBe(204);
    expect((await row(carol.id)).deleted_at).not.toBeNull();
    expect(await tokenWorks(carol.access)).toBe(false);
  });

  it('an admin may do everything', async () => {
    const dave = await createUser({ name: 'Dave Perm' });
    const put = await t.put(`/api/users/${dave.id}`, { name: 'Dave Admin', role: 'admin', is_active: true }, { token: admin });
    expect(put.status).toBe(200);
    expect(put.body.data).toMatchObject({ role: 'admin', name: 'Dave Admin', deleted_at: null });
    expect((await t.delete(`/api/users/${dave.id}`, { token: admin })).status).toBe(204);
    const restored = await t.post(`/api/users/${dave.id}/restore`, undefined, { token: admin });
    expect(restored.status).toBe(200);
    expect((await list({ q: dave.email })).body.data.map((u: any) => u.id)).toEqual([dave.id]);
  });

  it('a promoted user gets admin rights at once, a demoted one loses them', async () => {
    const erin = await t.register({ name: 'Erin Perm' });
    expectError(await list({}, erin.access), 403, 'FORBIDDEN');
    expect((await t.put(`/api/users/${erin.id}`, { role: 'admin' }, { token: admin })).status).toBe(200);
    expect((await row(erin.id)).role).toBe('admin');
    expect((await list({}, erin.access)).status).toBe(200);
    const other = await t.get(`/api/users/${alice.id}`, { token: erin.access });
    expect(other.status).toBe(200);
    expect(Object.keys(other.body.data).sort()).toEqual(ADMIN_VIEW_KEYS);
    expect((await t.put(`/api/users/${erin.id}`, { role: 'user' }, { token: admin })).status).toBe(200);
    expectError(await list({}, erin.access), 403, 'FORBIDDEN');
  });
});

describe('POST /api/users', () => {
  it('creates a user: 201, default role user, active, unverified, e-mail normalised, password hashed', async () => {
    const email = uniqueEmail('Create');
    const res = await t.post(
      '/api/users',
      { name: '  Grace Hopper  ', email: `  ${email.toUpperCase()} `, password: 'correct-horse' },
      { token: admin },
    );
    expect(res.status).toBe(201);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(Object.keys(res.body.data).sort()).toEqual(ADMIN_VIEW_KEYS);
    const r = await row(res.body.data.id);
    expect(res.body).toEqual({ success: true, data: adminView(r) });
    expect(r).toMatchObject({
      email: email.toLowerCase(),
      name: 'Grace Hopper',
      role: 'user',
      is_active: true,
      email_verified: false,
      deleted_at: null,
    });
    expect(r.password_hash).not.toBe('correct-horse');
    expect(await verify('correct-horse', r.password_hash)).toBe(true);
    expect((await login(email, 'correct-horse')).status).toBe(200);
  });

  it('honours role and is_active', async () => {
    const boss = await createUser({ role: 'admin', password: 'boss-password' });
    expect(boss).toMatchObject({ role: 'admin', is_active: true });
    expect((await row(boss.id)).role).toBe('admin');
    const bossLogin = await login(boss.email, 'boss-password');
    expect(bossLogin.status).toBe(200);
    expect((await list({}, bossLogin.body.data.access_token)).status).toBe(200);

    const off = await createUser({ is_active: false, password: 'off-password' });
    expect(off).toMatchObject({ role: 'user', is_active: false });
    expect((await row(off.id)).is_active).toBe(false);
    expectError(await login(off.email, 'off-password'), 403, 'FORBIDDEN');

    const plain = await createUser({ role: 'user', is_active: true });
    expect(plain).toMatchObject({ role: 'user', is_active: true });
  });

  it('refuses a taken e-mail, whatever its case: 409 CONFLICT', async () => {
    const existing = await createUser();
    const before = await t.db.selectFrom('users').select('id').execute();
    const res = await t.post(
      '/api/users',
      { name: 'Twin', email: existing.email.toUpperCase(), password: 'password-123' },
      { token: admin },
    );
    expectError(res, 409, 'CONFLICT');
    expect(await t.db.selectFrom('users').select('id').execute()).toHaveLength(before.length);
    expect((await row(existing.id)).name).toBe('Created User');
  });

  it("refuses a soft-deleted user's e-mail: 409 CONFLICT", async () => {
    const gone = await createUser();
    expect((await t.delete(`/api/users/${gone.id}`, { token: admin })).status).toBe(204);
    const res = await t.post('/api/users', { name: 'Reuse', email: gone.email, password: 'password-123' }, { token: admin });
    expectError(res, 409, 'CONFLICT');
    const rows = await t.db.selectFrom('users').selectAll().where('email', '=', gone.email).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0].id).toBe(gone.id);
  });

  it('422 names every missing field', async () => {
    expectInvalid(await t.post('/api/users', {}, { token: admin }), ['body.name', 'body.email', 'body.password']);
    expectInvalid(await t.post('/api/users', undefined, { token: admin }), ['body.name', 'body.email', 'body.password']);
    expectInvalid(await t.post('/api/users', { name: 'Only Name' }, { token: admin }), ['body.email', 'body.password']);
  });

  it('422 for invalid and unknown fields, and nothing is created', async () => {
    const email = uniqueEmail('invalid');
    const valid = { name: 'Valid Name', email, password: 'password-123' };
    const cases: Array<[Record<string, unknown>, string[]]> = [
      [{ ...valid, email: 'not-an-email' }, ['body.email']],
      [{ ...valid, email: 42 }, ['body.email']],
      [{ ...valid, password: 'short' }, ['body.password']],
      [{ ...valid, password: 'x'.repeat(73) }, ['body.password']],
      [{ ...valid, password: 'é'.repeat(40) }, ['body.password']], // 40 characters, 80 bytes
      [{ ...valid, name: '' }, ['body.name']],
      [{ ...valid, name: '   ' }, ['body.name']],
      [{ ...valid, name: 'n'.repeat(101) }, ['body.name']],
      [{ ...valid, role: 'superuser' }, ['body.role']],
      [{ ...valid, is_active: 'maybe' }, ['body.is_active']],
      [{ ...valid, deleted_at: null }, ['body.deleted_at']],
      [{ ...valid, email_verified: true }, ['body.email_verified']],
      [{ ...valid, password_hash: 'x' }, ['body.password_hash']],
      [{ ...valid, name: 'short', password: 'short', color: 'red' }, ['body.password', 'body.color']],
    ];
    for (const [body, fields] of cases) {
      const res = await t.post('/api/users', body, { token: admin });
      expectInvalid(res, fields);
    }
    expect(await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst()).toBeUndefined();
    // The valid body itself goes through.
    expect((await t.post('/api/users', valid, { token: admin })).status).toBe(201);
  });
});

describe('PUT /api/users/{id}', () => {
  it('updates only the fields sent', async () => {
    const u = await createUser({ name: 'Partial Before' });
    const before = await row(u.id);
    const res = await t.put(`/api/users/${u.id}`, { name: '  Partial After ' }, { token: admin });
    expect(res.status).toBe(200);
    const after = await row(u.id);
    expect(res.body).toEqual({ success: true, data: adminView(after) });
    expect(after).toEqual({ ...before, name: 'Partial After', updated_at: after.updated_at });
    expect(new Date(after.updated_at).getTime()).toBeGreaterThanOrEqual(new Date(before.updated_at).getTime());
  });

  it('an empty body is a 422 and changes nothing', async () => {
    const u = await createUser();
    const before = await row(u.id);
    expectError(await t.put(`/api/users/${u.id}`, {}, { token: admin }), 422, 'VALIDATION_ERROR');
    expectError(await t.put(`/api/users/${u.id}`, undefined, { token: admin }), 422, 'VALIDATION_ERROR');
    expect(await row(u.id)).toEqual(before);
  });

  it('422 for invalid and unknown fields', async () => {
    const u = await createUser();
    const before = await row(u.id);
    const cases: Array<[Record<string, unknown>, string[]]> = [
      [{ name: '  ' }, ['body.name']],
      [{ email: 'nope' }, ['body.email']],
      [{ password: 'short' }, ['body.password']],
      [{ password: 'é'.repeat(40) }, ['body.password']],
      [{ role: 'root' }, ['body.role']],
      [{ is_active: 'no' }, ['body.is_active']],
      [{ email_verified: true }, ['body.email_verified']],
      [{ name: 'Fine', id: 5 }, ['body.id']],
    ];
    for (const [body, fields] of cases) expectInvalid(await t.put(`/api/users/${u.id}`, body, { token: admin }), fields);
    expect(await row(u.id)).toEqual(before);
  });

  it('a new e-mail is lower-cased and clears email_verified', async () => {
    const u = await t.register();
    await t.db.updateTable('users').set({ email_verified: true }).where('id', '=', u.id).execute();
    const email = uniqueEmail('Changed');
    // An admin's change applies at once (a user's own stays pending: test/credentials.test.ts).
    const res = await t.put(`/api/users/${u.id}`, { email: ` ${email.toUpperCase()}` }, { token: admin });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ email: email.toLowerCase(), email_verified: false });
    expect(await row(u.id)).toMatchObject({ email: email.toLowerCase(), email_verified: false });
    expect((await login(email, u.password)).status).toBe(200);
    expectError(await login(u.email, u.password), 401, 'INVALID_CREDENTIALS');
  });

  it('the same e-mail in another case is not a new e-mail', async () => {
    const u = await t.register();
    await t.db.updateTable('users').set({ email_verified: true }).where('id', '=', u.id).execute();
    const res = await t.put(`/api/users/${u.id}`, { email: u.email.toUpperCase(), current_password: u.password }, { token: u.access });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ email: u.email, email_verified: true });
    expect(await row(u.id)).toMatchObject({ email: u.email, email_verified: true });
  });

  it("a taken e-mail (another user's, in any case, deleted or not) is a 409", async () => {
    const u = await t.register();
    const other = await createUser();
    const gone = await createUser();
    expect((await t.delete(`/api/users/${gone.id}`, { token: admin })).status).toBe(204);
    const before = await row(u.id);
    expectError(
      await t.put(`/api/users/${u.id}`, { email: other.email.toUpperCase(), current_password: u.password }, { token: u.access }),
      409,
      'CONFLICT',
    );
    expectError(await t.put(`/api/users/${u.id}`, { email: gone.email }, { token: admin }), 409, 'CONFLICT');
    expectError(await t.put(`/api/users/${u.id}`, { email: ADMIN.email, name: 'Not Applied' }, { token: admin }), 409, 'CONFLICT');
    expect(await row(u.id)).toEqual(before);
  });

  it("a new password revokes the user's other sessions, keeps the current one, and logs in", async () => {
    const u = await t.register({ password: 'first-password' });
    const second = await login(u.email, 'first-password');
    expect(second.status).toBe(200);
    const other = second.body.data;
    expect(await tokenWorks(other.access_token)).toBe(true);

    const res = await t.put(`/api/users/${u.id}`, { password: 'second-password', current_password: 'first-password' }, { token: u.access });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.data).sort()).toEqual(USER_KEYS);

    expect(await tokenWorks(u.access)).toBe(true);
    expect(await tokenWorks(other.access_token)).toBe(false);
    expectUnauthorized(await t.post('/api/auth/refresh', { refresh_token: other.refresh_token }));
    expect((await t.post('/api/auth/refresh', { refresh_token: u.refresh })).status).toBe(200);

    const sessions = await sessionsOf(u.id);
    expect(sessions).toHaveLength(2);
    expect(sessions.filter((s) => s.revoked_at === null)).toHaveLength(1);

    expectError(await login(u.email, 'first-password'), 401, 'INVALID_CREDENTIALS');
    expect((await login(u.email, 'second-password')).status).toBe(200);
    expect(await verify('second-password', (await row(u.id)).password_hash)).toBe(true);
  });

  it("an admin setting a user's password revokes every session of that user, not the admin's", async () => {
    const u = await t.register({ password: 'first-password' });
    const res = await t.put(`/api/users/${u.id}`, { password: 'admin-chosen-pw' }, { token: admin });
    expect(res.status).toBe(200);
    expect(await tokenWorks(u.access)).toBe(false);
    expect(await tokenWorks(admin)).toBe(true);
    expect((await login(u.email, 'admin-chosen-pw')).status).toBe(200);
  });

  it("disabling a user ends their tokens' access and login says 403", async () => {
    const u = await t.register({ password: 'disable-password' });
    expect(await tokenWorks(u.access)).toBe(true);
    const res = await t.put(`/api/users/${u.id}`, { is_active: false }, { token: admin });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: u.id, is_active: false, deleted_at: null });
    expect((await row(u.id)).is_active).toBe(false);
    expect(await tokenWorks(u.access)).toBe(false);
    expectUnauthorized(await t.get(`/api/users/${u.id}`, { token: u.access }));
    expectUnauthorized(await t.post('/api/auth/refresh', { refresh_token: u.refresh }));
    const denied = await login(u.email, 'disable-password');
    expectError(denied, 403, 'FORBIDDEN');

    expect((await t.put(`/api/users/${u.id}`, { is_active: true }, { token: admin })).status).toBe(200);
    expect((await login(u.email, 'disable-password')).status).toBe(200);
  });

  it('404 for an unknown or deleted user', async () => {
    expectError(await t.put(`/api/users/${MAX_ID}`, { name: 'Ghost' }, { token: admin }), 404, 'NOT_FOUND');
    const gone = await createUser();
    expect((await t.delete(`/api/users/${gone.id}`, { token: admin })).status).toBe(204);
    expectError(await t.put(`/api/users/${gone.id}`, { name: 'Ghost' }, { token: admin }), 404, 'NOT_FOUND');
    expect((await row(gone.id)).name).toBe('Created User');
  });

  it('422 for an id that is not an integer from 1 to 2147483647, on every operation', async () => {
    for (const id of ['abc', '0', '-1', '1.5', '2147483648', '99999999999999999999']) {
      expectInvalid(await t.get(`/api/users/${id}`, { token: admin }), ['path.id']);
      expectInvalid(await t.put(`/api/users/${id}`, { name: 'X' }, { token: admin }), ['path.id']);
      expectInvalid(await t.delete(`/api/users/${id}`, { token: admin }), ['path.id']);
      expectInvalid(await t.post(`/api/users/${id}/restore`, undefined, { token: admin }), ['path.id']);
    }
  });
});

describe('DELETE /api/users/{id}', () => {
  it('soft-deletes: 204 with no body, deleted_at set, every session revoked', async () => {
    const u = await t.register({ password: 'delete-password' });
    const second = (await login(u.email, 'delete-password')).body.data;
    const res = await t.delete(`/api/users/${u.id}`, { token: admin });
    expect(res.status).toBe(204);
    expect(res.body).toEqual({});
    expect(res.headers['content-type']).toBeUndefined();

    const r = await row(u.id);
    expect(r.deleted_at).toBeInstanceOf(Date);
    expect(Math.abs(new Date(r.deleted_at!).getTime() - Date.now())).toBeLessThan(60_000);
    const sessions = await sessionsOf(u.id);
    expect(sessions).toHaveLength(2);
    for (const s of sessions) expect(s.revoked_at).not.toBeNull();

    expect(await tokenWorks(u.access)).toBe(false);
    expect(await tokenWorks(second.access_token)).toBe(false);
    expectUnauthorized(await t.post('/api/auth/refresh', { refresh_token: u.refresh }));
  });

  it('a deleted user is 404 to everyone, cannot be deleted again and cannot log in', async () => {
    const u = await t.register({ password: 'deleted-password' });
    expect((await t.delete(`/api/users/${u.id}`, { token: u.access })).status).toBe(204);
    expectError(await t.get(`/api/users/${u.id}`, { token: admin }), 404, 'NOT_FOUND');
    expectError(await t.delete(`/api/users/${u.id}`, { token: admin }), 404, 'NOT_FOUND');
    const r = await row(u.id);
    expect(r.deleted_at).not.toBeNull();
    const denied = await login(u.email, 'deleted-password');
    expectError(denied, 401, 'INVALID_CREDENTIALS');
    expect(denied.body.error.message).toBe('Invalid email or password');
    expect(await row(u.id)).toEqual(r);
  });

  it('404 for an unknown id', async () => {
    expectError(await t.delete(`/api/users/${MAX_ID}`, { token: admin }), 404, 'NOT_FOUND');
    expectError(await t.get(`/api/users/${MAX_ID}`, { token: admin }), 404, 'NOT_FOUND');
  });
});

describe('POST /api/users/{id}/restore', () => {
  it('restores a deleted user: 200 with the user, deleted_at null, and they log in again', async () => {
    const u = await t.register({ password: 'restore-password' });
    expect((await t.delete(`/api/users/${u.id}`, { token: admin })).status).toBe(204);
    const res = await t.post(`/api/users/${u.id}/restore`, undefined, { token: admin });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.data).sort()).toEqual(ADMIN_VIEW_KEYS);
    const r = await row(u.id);
    expect(r.deleted_at).toBeNull();
    expect(res.body).toEqual({ success: true, data: adminView(r) });
    expect(res.body.data).toMatchObject({ id: u.id, email: u.email, deleted_at: null });

    // The sessions revoked by the deletion stay revoked.
    expect(await tokenWorks(u.access)).toBe(false);
    const again = await login(u.email, 'restore-password');
    expect(again.status).toBe(200);
    expect(await tokenWorks(again.body.data.access_token)).toBe(true);
    expect((await t.get(`/api/users/${u.id}`, { token: admin })).status).toBe(200);
  });

  it('409 CONFLICT for a user that is not deleted', async () => {
    const u = await createUser();
    const before = await row(u.id);
    expectError(await t.post(`/api/users/${u.id}/restore`, undefined, { token: admin }), 409, 'CONFLICT');
    expect(await row(u.id)).toEqual(before);
  });

  it('404 NOT_FOUND for an unknown id', async () => {
    expectError(await t.post(`/api/users/${MAX_ID}/restore`, undefined, { token: admin }), 404, 'NOT_FOUND');
  });
});

describe('GET /api/users', () => {
  // Seven active users whose names and e-mails order differently from their ids, with one name
  // tie, one created_at tie and one updated_at tie, so that every sort needs its id tie-break.
  const sortMark = marker('srt');
  const SPECS = [
    { name: 'delta', mail: 'c', created: 30, updated: 5 },
    { name: 'alpha', mail: 'f', created: 10, updated: 60 },
    { name: 'echo', mail: 'a', created: 50, updated: 5 },
    { name: 'alpha', mail: 'g', created: 20, updated: 40 },
    { name: 'bravo', mail: 'b', created: 30, updated: 10 },
    { name: 'charlie', mail: 'e', created: 0, updated: 70 },
    { name: 'foxtrot', mail: 'd', created: 40, updated: 20 },
  ];
  let sorted: UserRow[] = [];
  const base = Date.parse('2025-03-01T00:00:00.000Z');

  beforeAll(async () => {
    const ids: number[] = [];
    for (const spec of SPECS) {
      const u = await createUser({ name: `${sortMark} ${spec.name}`, email: `${sortMark}.${spec.mail}@example.com` });
      ids.push(u.id);
    }
    for (const [i, spec] of SPECS.entries()) {
      await t.db
        .updateTable('users')
        .set({ created_at: new Date(base + spec.created * 1000), updated_at: new Date(base + 1000_000 + spec.updated * 1000) })
        .where('id', '=', ids[i])
        .execute();
    }
    sorted = await t.db.selectFrom('users').selectAll().where('id', 'in', ids).orderBy('id').execute();
  });

  const ids = (res: Response): number[] => res.body.data.map((u: { id: number }) => u.id);

  /** The expected order: by the field, then by id, both in the same direction. */
  function expected(field: 'id' | 'email' | 'name' | 'created_at' | 'updated_at', descending: boolean): number[] {
    const value = (r: UserRow) => (r[field] instanceof Date ? (r[field] as Date).getTime() : r[field]);
    const ordered = [...sorted].sort((a, b) => {
      const va = value(a);
      const vb = value(b);
      if (va !== vb) return va < vb ? -1 : 1;
      return a.id - b.id;
    });
    if (descending) ordered.reverse();
    return ordered.map((r) => r.id);
  }

  it('defaults: page 1, 20 per page, newest first, items as admins see them', async () => {
    const res = await list({ q: sortMark });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.meta).toEqual({ page: 1, per_page: 20, total: 7, pages: 1, has_next: false, has_prev: false });
    expect(ids(res)).toEqual(expected('created_at', true));
    const byId = new Map(sorted.map((r) => [r.id, r]));
    for (const item of res.body.data) {
      expect(Object.keys(item).sort()).toEqual(ADMIN_VIEW_KEYS);
      expect(item).toEqual(adminView(byId.get(item.id)!));
    }
  });

  it('the default page size applies to the whole collection', async () => {
    const total = Number(
      (
        await t.db
          .selectFrom('users')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('deleted_at', 'is', null)
          .executeTakeFirstOrThrow()
      ).n,
    );
    expect(total).toBeGreaterThan(20);
    const res = await list({});
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(20);
    expect(res.body.meta).toEqual({ page: 1, per_page: 20, total, pages: Math.ceil(total / 20), has_next: true, has_prev: false });
  });

  it('meta: pages is ceil(total / per_page), has_next and has_prev follow the page', async () => {
    for (const perPage of [1, 2, 3, 6, 7, 8]) {
      const pages = Math.ceil(7 / perPage);
      for (let page = 1; page <= pages; page++) {
        const res = await list({ q: sortMark, per_page: perPage, page, sort: 'id', order: 'asc' });
        expect(res.status).toBe(200);
        expect(res.body.meta).toEqual({ page, per_page: perPage, total: 7, pages, has_next: page < pages, has_prev: page > 1 });
        expect(ids(res)).toEqual(expected('id', false).slice((page - 1) * perPage, page * perPage));
      }
    }
  });

  it('a page past the last is 200 with an empty data and has_prev true', async () => {
    const res = await list({ q: sortMark, per_page: 3, page: 4 });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: [],
      meta: { page: 4, per_page: 3, total: 7, pages: 3, has_next: false, has_prev: true },
    });
    const far = await list({ q: sortMark, page: 1000 });
    expect(far.body).toEqual({
      success: true,
      data: [],
      meta: { page: 1000, per_page: 20, total: 7, pages: 1, has_next: false, has_prev: true },
    });
    const none = await list({ q: marker('nobody') });
    expect(none.body).toEqual({
      success: true,
      data: [],
      meta: { page: 1, per_page: 20, total: 0, pages: 0, has_next: false, has_prev: false },
    });
  });

  it('422 for per_page above the maximum, per_page 0, page 0 and non-integers', async () => {
    expectInvalid(await list({ per_page: 101 }), ['query.per_page']);
    expectInvalid(await list({ per_page: 0 }), ['query.per_page']);
    expectInvalid(await list({ per_page: -5 }), ['query.per_page']);
    expectInvalid(await list({ per_page: 'ten' }), ['query.per_page']);
    expectInvalid(await list({ page: 0 }), ['query.page']);
    expectInvalid(await list({ page: -1 }), ['query.page']);
    expectInvalid(await list({ page: 'two' }), ['query.page']);
    expectInvalid(await list({ page: 0, per_page: 101 }), ['query.page', 'query.per_page']);
    expect((await list({ q: sortMark, per_page: 100 })).status).toBe(200);
  });

  for (const field of ['id', 'email', 'name', 'created_at', 'updated_at'] as const) {
    for (const order of ['asc', 'desc'] as const) {
      it(`sort=${field}&order=${order}: ordered with ties by id, and pages of 3 neither repeat nor skip`, async () => {
        const want = expected(field, order === 'desc');
        const full = await list({ q: sortMark, sort: field, order, per_page: 100 });
        expect(full.status).toBe(200);
        expect(ids(full)).toEqual(want);
        const paged: number[] = [];
        for (let page = 1; page <= 4; page++) {
          const res = await list({ q: sortMark, sort: field, order, per_page: 3, page });
          expect(res.status).toBe(200);
          expect(res.body.meta).toMatchObject({ page, total: 7, pages: 3 });
          paged.push(...ids(res));
        }
        expect(paged).toEqual(want);
      });
    }
  }

  it('sort defaults to created_at and an unknown sort falls back to it', async () => {
    expect(ids(await list({ q: sortMark }))).toEqual(expected('created_at', true));
    expect(ids(await list({ q: sortMark, sort: 'password_hash' }))).toEqual(expected('created_at', true));
    expect(ids(await list({ q: sortMark, sort: 'bogus', order: 'asc' }))).toEqual(expected('created_at', false));
    expect(ids(await list({ q: sortMark, sort: '' }))).toEqual(expected('created_at', true));
  });

  it('order defaults to desc and any value other than desc sorts ascending', async () => {
    expect(ids(await list({ q: sortMark, sort: 'name' }))).toEqual(expected('name', true));
    for (const order of ['up', 'ascending', 'DESC', '']) {
      expect(ids(await list({ q: sortMark, sort: 'name', order }))).toEqual(expected('name', false));
    }
  });

  describe('status', () => {
    const mark = marker('sts');
    let active: any;
    let inactive: any;
    let deletedActive: any;
    let deletedInactive: any;

    beforeAll(async () => {
      active = await createUser({ name: `${mark} active` });
      inactive = await createUser({ name: `${mark} inactive`, is_active: false });
      deletedActive = await createUser({ name: `${mark} deleted one` });
      deletedInactive = await createUser({ name: `${mark} deleted two`, is_active: false });
      for (const u of [deletedActive, deletedInactive]) expect((await t.delete(`/api/users/${u.id}`, { token: admin })).status).toBe(204);
    });

    it('without status: every user that is not deleted', async () => {
      const res = await list({ q: mark, sort: 'id', order: 'asc' });
      expect(ids(res)).toEqual([active.id, inactive.id]);
      expect(res.body.meta.total).toBe(2);
    });

    it('status=active, inactive and deleted', async () => {
      const a = await list({ q: mark, status: 'active', sort: 'id', order: 'asc' });
      expect(ids(a)).toEqual([active.id]);
      expect(a.body.meta.total).toBe(1);
      const i = await list({ q: mark, status: 'inactive', sort: 'id', order: 'asc' });
      expect(ids(i)).toEqual([inactive.id]);
      expect(i.body.data[0]).toMatchObject({ is_active: false, deleted_at: null });
      const d = await list({ q: mark, status: 'deleted', sort: 'id', order: 'asc' });
      expect(ids(d)).toEqual([deletedActive.id, deletedInactive.id]);
      expect(d.body.meta).toEqual({ page: 1, per_page: 20, total: 2, pages: 1, has_next: false, has_prev: false });
      for (const item of d.body.data) {
        expect(item.deleted_at).toMatch(ISO);
        expect(item).toEqual(adminView(await row(item.id)));
      }
    });

    it('a restored user leaves status=deleted and comes back to the default list', async () => {
      const u = await createUser({ name: `${marker('rt')} roundtrip` });
      expect((await t.delete(`/api/users/${u.id}`, { token: admin })).status).toBe(204);
      expect(ids(await list({ q: u.name }))).toEqual([]);
      expect(ids(await list({ q: u.name, status: 'deleted' }))).toEqual([u.id]);
      expect((await t.post(`/api/users/${u.id}/restore`, undefined, { token: admin })).status).toBe(200);
      expect(ids(await list({ q: u.name }))).toEqual([u.id]);
      expect(ids(await list({ q: u.name, status: 'deleted' }))).toEqual([]);
    });

    it('an unknown status is a 422', async () => {
      expectInvalid(await list({ status: 'banned' }), ['query.status']);
    });

    it('status and q apply to the cursor shape too', async () => {
      const res = await list({ q: mark, status: 'deleted', cursor: 0 });
      expect(res.body).toEqual({
        success: true,
        data: [adminView(await row(deletedActive.id)), adminView(await row(deletedInactive.id))],
        meta: { next_cursor: null, has_more: false },
      });
      expect(ids(await list({ q: mark, status: 'inactive', limit: 5 }))).toEqual([inactive.id]);
      expect(ids(await list({ q: mark, limit: 5 }))).toEqual([active.id, inactive.id]);
    });
  });

  describe('q', () => {
    const mark = marker('qq');
    const mailOnly = marker('mailonly');
    let percent: any;
    let plainPercent: any;
    let underscore: any;
    let plainUnderscore: any;
    let backslash: any;
    let mixedCase: any;
    let byMail: any;

    beforeAll(async () => {
      percent = await createUser({ name: `${mark} 100% sure` });
      plainPercent = await createUser({ name: `${mark} 100x sure` });
      underscore = await createUser({ name: `${mark} snake_case` });
      plainUnderscore = await createUser({ name: `${mark} snakeXcase` });
      backslash = await createUser({ name: `${mark} back\\slash` });
      mixedCase = await createUser({ name: `${mark.toUpperCase()} Mixed CASE` });
      byMail = await createUser({ name: 'Nothing Special', email: `${mailOnly}@example.com` });
    });

    it('is a case-insensitive substring of the name', async () => {
      const all = await list({ q: mark.toUpperCase(), sort: 'id', order: 'asc' });
      expect(ids(all)).toEqual([percent.id, plainPercent.id, underscore.id, plainUnderscore.id, backslash.id, mixedCase.id]);
      expect(ids(await list({ q: 'mixed case', per_page: 100 }))).toContain(mixedCase.id);
      expect(ids(await list({ q: `${mark} mIxEd` }))).toEqual([mixedCase.id]);
      expect(ids(await list({ q: `${mark} snake` }))).toHaveLength(2);
    });

    it('is a case-insensitive substring of the e-mail', async () => {
      expect(ids(await list({ q: mailOnly.toUpperCase() }))).toEqual([byMail.id]);
      expect(ids(await list({ q: `${mailOnly.slice(3)}@EXAMPLE.com` }))).toEqual([byMail.id]);
    });

    it("'%', '_' and '\\' match literally", async () => {
      expect(ids(await list({ q: `${mark} 100%` }))).toEqual([percent.id]);
      expect(ids(await list({ q: `${mark} 100x` }))).toEqual([plainPercent.id]);
      expect(ids(await list({ q: `${mark} snake_` }))).toEqual([underscore.id]);
      expect(ids(await list({ q: `${mark} back\\` }))).toEqual([backslash.id]);
      expect(ids(await list({ q: `${mark}%sure` }))).toEqual([]);
      expect(ids(await list({ q: `${mark}_` }))).toEqual([]);
      expect((await list({ q: '%' })).body.data.every((u: any) => u.name.includes('%') || u.email.includes('%'))).toBe(true);
      expect((await list({ q: '_', per_page: 100 })).body.data.every((u: any) => u.name.includes('_') || u.email.includes('_'))).toBe(true);
    });

    it('an empty q filters nothing; a q over 100 characters is a 422', async () => {
      const all = await list({});
      const empty = await list({ q: '' });
      expect(empty.status).toBe(200);
      expect(empty.body.meta.total).toBe(all.body.meta.total);
      expectInvalid(await list({ q: 'x'.repeat(101) }), ['query.q']);
    });
  });

  describe('cursor shape', () => {
    const cursorIds = () => sorted.map((r) => r.id);

    it('pages through by id ascending with next_cursor and has_more', async () => {
      const all = cursorIds();
      const first = await list({ q: sortMark, limit: 3 });
      expect(first.status).toBe(200);
      expect(ids(first)).toEqual(all.slice(0, 3));
      expect(first.body.meta).toEqual({ next_cursor: all[2], has_more: true });
      const second = await list({ q: sortMark, limit: 3, cursor: first.body.meta.next_cursor });
      expect(ids(second)).toEqual(all.slice(3, 6));
      expect(second.body.meta).toEqual({ next_cursor: all[5], has_more: true });
      const third = await list({ q: sortMark, limit: 3, cursor: second.body.meta.next_cursor });
      expect(ids(third)).toEqual(all.slice(6));
      expect(third.body.meta).toEqual({ next_cursor: null, has_more: false });
    });

    it('returns only ids greater than the cursor; an exactly full last page has no next_cursor', async () => {
      const all = cursorIds();
      const after = await list({ q: sortMark, cursor: all[1] });
      expect(ids(after)).toEqual(all.slice(2));
      expect(after.body.meta).toEqual({ next_cursor: null, has_more: false });
      const exact = await list({ q: sortMark, cursor: all[3], limit: 3 });
      expect(ids(exact)).toEqual(all.slice(4));
      expect(exact.body.meta).toEqual({ next_cursor: null, has_more: false });
      const past = await list({ q: sortMark, cursor: all[6] });
      expect(past.body).toEqual({ success: true, data: [], meta: { next_cursor: null, has_more: false } });
      const between = await list({ q: sortMark, cursor: all[0], limit: 1 });
      expect(ids(between)).toEqual([all[1]]);
      expect(between.body.meta).toEqual({ next_cursor: all[1], has_more: true });
    });

    it('ignores sort and order', async () => {
      const res = await list({ q: sortMark, cursor: 0, sort: 'name', order: 'desc' });
      expect(ids(res)).toEqual(cursorIds());
    });

    it('limit defaults to 20 and cursor to 0', async () => {
      const live = await t.db.selectFrom('users').select('id').where('deleted_at', 'is', null).orderBy('id').limit(21).execute();
      expect(live).toHaveLength(21);
      const res = await list({ cursor: 0 });
      expect(ids(res)).toEqual(live.slice(0, 20).map((r) => r.id));
      expect(res.body.meta).toEqual({ next_cursor: live[19].id, has_more: true });
      const byLimit = await list({ limit: 20 });
      expect(byLimit.body).toEqual(res.body);
      const next = await list({ cursor: res.body.meta.next_cursor, limit: 1 });
      expect(ids(next)).toEqual([live[20].id]);
    });

    it('mixing page/per_page with cursor/limit is a 422', async () => {
      expectInvalid(await list({ page: 1, cursor: 0 }), ['query.page', 'query.cursor']);
      expectInvalid(await list({ per_page: 5, limit: 5 }), ['query.per_page', 'query.limit']);
      expectInvalid(await list({ page: 2, per_page: 5, cursor: 3, limit: 5 }), [
        'query.page',
        'query.per_page',
        'query.cursor',
        'query.limit',
      ]);
    });

    it('422 for a limit above the maximum, limit 0 and a negative cursor', async () => {
      expectInvalid(await list({ limit: 101 }), ['query.limit']);
      expectInvalid(await list({ limit: 0 }), ['query.limit']);
      expectInvalid(await list({ cursor: -1 }), ['query.cursor']);
      expectInvalid(await list({ cursor: 'abc' }), ['query.cursor']);
      expect((await list({ q: sortMark, limit: 100 })).status).toBe(200);
    });
  });
});

describe('with MAX_PAGE_SIZE=5 and DEFAULT_PAGE_SIZE=2', () => {
  let small: TestContext;
  let token: string;
  const mark = marker('cfg');
  const created: number[] = [];

  beforeAll(async () => {
    small = await startTestApp({ MAX_PAGE_SIZE: '5', DEFAULT_PAGE_SIZE: '2' });
    token = await small.adminToken();
    for (const name of ['one', 'two', 'three']) {
      const res = await small.post(
        '/api/users',
        { name: `${mark} ${name}`, email: uniqueEmail(mark), password: 'password-123' },
        { token },
      );
      expect(res.status).toBe(201);
      created.push(res.body.data.id);
    }
  });
  afterAll(() => small.close());

  const get = (query: string) => small.get(`/api/users?${query}`, { token });

  it('pages hold 2 users by default', async () => {
    const res = await get(`q=${mark}&sort=id&order=asc`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((u: any) => u.id)).toEqual(created.slice(0, 2));
    expect(res.body.meta).toEqual({ page: 1, per_page: 2, total: 3, pages: 2, has_next: true, has_prev: false });
  });

  it('per_page and limit above 5 are a 422; 5 is fine', async () => {
    expectInvalid(await get('per_page=6'), ['query.per_page']);
    expectInvalid(await get('limit=6'), ['query.limit']);
    const five = await get(`q=${mark}&per_page=5`);
    expect(five.status).toBe(200);
    expect(five.body.meta).toMatchObject({ per_page: 5, total: 3, pages: 1 });
    const limit = await get(`q=${mark}&limit=5`);
    expect(limit.status).toBe(200);
    expect(limit.body.meta).toEqual({ next_cursor: null, has_more: false });
  });
});

describe('meta.total at any size', () => {
  // Totals without a search come from counters the database keeps per state; they must agree with
  // the rows through every kind of change, made through the API or straight in SQL.
  const STATUS_SQL: Record<string, string> = {
    '': 'deleted_at is null',
    active: 'deleted_at is null and is_active',
    inactive: 'deleted_at is null and not is_active',
    deleted: 'deleted_at is not null',
  };

  async function expectExactTotals(): Promise<void> {
    for (const [status, where] of Object.entries(STATUS_SQL)) {
      const { rows } = await sql.raw<{ n: number }>(`select count(*)::int as n from users where ${where}`).execute(t.db);
      const res = await t.get(`/api/users${status ? `?status=${status}` : ''}`, { token: admin });
      expect(res.status).toBe(200);
      expect({ status, total: res.body.meta.total }).toEqual({ status, total: rows[0].n });
    }
  }

  it('follows creation, deactivation, deletion, restoration and rows changed outside the API', async () => {
    await expectExactTotals();
    const users = await Promise.all(Array.from({ length: 4 }, () => t.register()));
    await expectExactTotals();
    expect((await t.put(`/api/users/${users[0].id}`, { is_active: false }, { token: admin })).status).toBe(200);
    await expectExactTotals();
    expect((await t.delete(`/api/users/${users[0].id}`, { token: admin })).status).toBe(204);
    expect((await t.delete(`/api/users/${users[1].id}`, { token: admin })).status).toBe(204);
    await expectExactTotals();
    expect((await t.post(`/api/users/${users[0].id}/restore`, undefined, { token: admin })).status).toBe(200);
    await expectExactTotals();
    // A change that leaves the state as it was moves no counter.
    expect((await t.put(`/api/users/${users[2].id}`, { name: 'Renamed' }, { token: admin })).status).toBe(200);
    await expectExactTotals();
    await sql`update users set is_active = false where id = ${users[2].id}`.execute(t.db);
    await sql`delete from users where id = ${users[3].id}`.execute(t.db);
    await expectExactTotals();
  });

  it('is not changed by a creation that failed', async () => {
    const before = await t.get('/api/users', { token: admin });
    const taken = await t.register();
    const again = await t.post('/api/users', { email: taken.email, password: 'another-password-1', name: 'Again' }, { token: admin });
    expect(again.status).toBe(409);
    const after = await t.get('/api/users', { token: admin });
    expect(after.body.meta.total).toBe(before.body.meta.total + 1);
    await expectExactTotals();
  });
});
