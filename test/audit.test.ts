import { randomUUID } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { sql } from 'kysely';
import request from 'supertest';
import type { AuditEventRow, AuditEventTable } from '../src/audit/audit-repository.js';
import { ADMIN, startTestApp, uniqueEmail, type Options, type Response, type TestContext } from './support/app.js';
import { expectError } from './support/expect.js';
import { linkToken, startSmtpServer, type TestSmtpServer } from './support/smtp.js';

const MAX_FAILURES = 3;
const USER_AGENT = 'audit-test/1.0';

let smtp: TestSmtpServer;
let t: TestContext;
let admin: string;
let adminId: number;
/** Every password and token the suite sends or receives: none may reach the audit trail. */
const secrets: string[] = [];

beforeAll(async () => {
  smtp = await startSmtpServer();
  t = await startTestApp({
    SMTP_URL: smtp.url,
    MAIL_POLL_INTERVAL_MS: '100',
    // The lockout needs the limiter; the per-IP limits are set out of the way.
    RATE_LIMIT_ENABLED: 'true',
    AUTH_RATE_LIMIT_PER_MINUTE: '100000',
    RATE_LIMIT_PER_MINUTE: '100000',
    LOGIN_MAX_FAILURES: String(MAX_FAILURES),
    // A replaced refresh token is reuse at once.
    REFRESH_REUSE_GRACE_SECONDS: '0',
  });
  admin = await t.adminToken();
  adminId = (await t.db.selectFrom('users').select('id').where('email', '=', ADMIN.email).executeTakeFirstOrThrow()).id;
  secrets.push(ADMIN.password, admin);
});
afterAll(async () => {
  await t?.close();
  await smtp?.close();
});

// ---------------------------------------------------------------------------------------------
// Helpers

type Row = AuditEventRow;

const audit = () => t.db.withTables<{ audit_events: AuditEventTable }>();

async function rows(where: (q: ReturnType<typeof base>) => ReturnType<typeof base> = (q) => q): Promise<Row[]> {
  const found = await where(base()).orderBy('id').execute();
  return found.map((row): Row => ({ ...row, id: Number(row.id) }));
}
const base = () => audit().selectFrom('audit_events').selectAll();

/** Events a user did or that were about them, oldest first. */
const rowsOf = (userId: number) =>
  rows((q) => q.where((eb) => eb.or([eb('actor_user_id', '=', userId), eb('subject_user_id', '=', userId)])));
/** Events of one request, by the X-Request-Id it was sent with. */
const rowsOfRequest = (requestId: string) => rows((q) => q.where('request_id', '=', requestId));
const typesOf = async (userId: number) => (await rowsOf(userId)).map((row) => row.event_type);

/** A request with its own X-Request-Id and a known User-Agent; returns the response and the id. */
async function traced(method: string, path: string, body?: unknown, options: Options = {}): Promise<{ res: Response; requestId: string }> {
  const requestId = `audit-${randomUUID()}`;
  const res = await t.send(method, path, body, {
    ...options,
    headers: { 'X-Request-Id': requestId, 'User-Agent': USER_AGENT, ...options.headers },
  });
  expect(res.headers['x-request-id']).toBe(requestId);
  return { res, requestId };
}

async function register() {
  const user = await t.register();
  secrets.push(user.password, user.access, user.refresh);
  return user;
}

async function login(email: string, password: string) {
  const res = await t.post('/api/auth/login/json', { email, password });
  expect(res.status).toBe(200);
  secrets.push(res.body.data.access_token, res.body.data.refresh_token);
  return { access: res.body.data.access_token as string, refresh: res.body.data.refresh_token as string };
}

function list(params: Record<string, string | number> = {}, token = admin): Promise<Response> {
  const query = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)])).toString();
  return t.get(`/api/audit-events${query ? `?${query}` : ''}`, { token });
}

/** An event as the endpoint shows it, from its row. */
function view(row: Row) {
  return { ...row, occurred_at: new Date(row.occurred_at).toISOString() };
}

const sidOf = (token: string) => (jwt.decode(token) as { sid: string }).sid;

async function mailToken(email: string, subject: string, path: string): Promise<string> {
  const token = linkToken(await smtp.waitFor((m) => m.to.includes(email) && m.subject === subject), path);
  secrets.push(token);
  return token;
}

// ---------------------------------------------------------------------------------------------

describe('each event is recorded', () => {
  it('registration, with the request it came from; the endpoint shows the same row', async () => {
    const email = uniqueEmail('audit');
    const password = 'register-password-1';
    secrets.push(password);
    const { res, requestId } = await traced('POST', '/api/auth/register', { email, password, name: 'Audit Test' });
    expect(res.status).toBe(201);
    secrets.push(res.body.data.access_token, res.body.data.refresh_token);
    const id: number = res.body.data.user.id;

    const [row, ...more] = await rowsOf(id);
    expect(more).toEqual([]);
    expect(row).toMatchObject({
      event_type: 'user.registered',
      actor_user_id: id,
      subject_user_id: id,
      user_agent: USER_AGENT,
      request_id: requestId,
      details: { session_id: sidOf(res.body.data.access_token) },
    });
    expect(row.ip).toMatch(/127\.0\.0\.1|::1/);

    const listed = await list({ user_id: id });
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({ success: true, data: [view(row)], meta: { next_cursor: null, has_more: false } });
  });

  it('logins that succeed and that fail, without keeping the e-mail that was tried', async () => {
    const user = await register();
    const ok = await traced('POST', '/api/auth/login/json', { email: user.email, password: user.password });
    expect(ok.res.status).toBe(200);
    secrets.push(ok.res.body.data.access_token, ok.res.body.data.refresh_token);
    expect(await rowsOfRequest(ok.requestId)).toMatchObject([
      {
        event_type: 'login.succeeded',
        actor_user_id: user.id,
        subject_user_id: user.id,
        details: { session_id: sidOf(ok.res.body.data.access_token) },
      },
    ]);

    const wrong = await traced('POST', '/api/auth/login', { username: user.email, password: 'wrong-password-1' }, { form: true });
    expect(wrong.res.status).toBe(401);
    expect(await rowsOfRequest(wrong.requestId)).toMatchObject([
      { event_type: 'login.failed', actor_user_id: null, subject_user_id: user.id, details: { reason: 'invalid_credentials' } },
    ]);

    const unknownEmail = uniqueEmail('nobody');
    const unknown = await traced('POST', '/api/auth/login/json', { email: unknownEmail, password: 'wrong-password-1' });
    expect(unknown.res.status).toBe(401);
    const [row] = await rowsOfRequest(unknown.requestId);
    expect(row).toMatchObject({
      event_type: 'login.failed',
      actor_user_id: null,
      subject_user_id: null,
      details: { reason: 'invalid_credentials' },
    });
    expect(JSON.stringify(row)).not.toContain(unknownEmail.split('@')[0]);
  });

  it('a login to a disabled account', async () => {
    const user = await register();
    expect((await t.put(`/api/users/${user.id}`, { is_active: false }, { token: admin })).status).toBe(200);
    const { res, requestId } = await traced('POST', '/api/auth/login/json', { email: user.email, password: user.password });
    expectError(res, 403, 'FORBIDDEN');
    expect(await rowsOfRequest(requestId)).toMatchObject([
      { event_type: 'login.failed', actor_user_id: null, subject_user_id: user.id, details: { reason: 'account_disabled' } },
    ]);
  });

  it('the failure that locks an account, once; attempts refused while locked add nothing', async () => {
    const user = await register();
    for (let i = 0; i < MAX_FAILURES; i++) {
      expect((await t.post('/api/auth/login/json', { email: user.email, password: 'wrong-password-1' })).status).toBe(401);
    }
    const refused = await t.post('/api/auth/login/json', { email: user.email, password: user.password });
    expectError(refused, 429, 'RATE_LIMITED');
    expect(await typesOf(user.id)).toEqual(['user.registered', ...Array(MAX_FAILURES).fill('login.failed'), 'login.locked']);
    const locked = (await rowsOf(user.id)).at(-1)!;
    expect(locked).toMatchObject({ actor_user_id: null, subject_user_id: user.id });
  });

  it('refresh, and a replaced refresh token presented again; a session already ended is not news', async () => {
    const user = await register();
    const sid = sidOf(user.refresh);
    const first = await t.post('/api/auth/refresh', { refresh_token: user.refresh });
    expect(first.status).toBe(200);
    secrets.push(first.body.data.access_token, first.body.data.refresh_token);

    const reused = await traced('POST', '/api/auth/refresh', { refresh_token: user.refresh });
    expectError(reused.res, 401, 'UNAUTHORIZED');
    expect(await rowsOfRequest(reused.requestId)).toMatchObject([
      { event_type: 'session.refresh_reuse_detected', actor_user_id: null, subject_user_id: user.id, details: { session_id: sid } },
    ]);

    // The session is revoked now: neither token is news any more.
    expect((await t.post('/api/auth/refresh', { refresh_token: user.refresh })).status).toBe(401);
    expect((await t.post('/api/auth/refresh', { refresh_token: first.body.data.refresh_token })).status).toBe(401);
    const events = await rowsOf(user.id);
    expect(events.map((row) => row.event_type)).toEqual(['user.registered', 'session.refreshed', 'session.refresh_reuse_detected']);
    expect(events[1]).toMatchObject({ actor_user_id: user.id, subject_user_id: user.id, details: { session_id: sid } });
  });

  it('a token refused after logout is not taken for reuse', async () => {
    const user = await register();
    expect((await t.post('/api/auth/logout', {}, { token: user.access })).status).toBe(200);
    expect((await t.post('/api/auth/refresh', { refresh_token: user.refresh })).status).toBe(401);
    expect(await typesOf(user.id)).toEqual(['user.registered', 'session.logged_out']);
  });

  it('logout, logout of every session, and revoking one session', async () => {
    const user = await register();
    const a = await login(user.email, user.password);
    const b = await login(user.email, user.password);

    expect((await t.delete(`/api/auth/sessions/${sidOf(b.access)}`, { token: a.access })).status).toBe(204);
    expect((await t.post('/api/auth/logout', undefined, { token: a.access })).status).toBe(200);
    const c = await login(user.email, user.password);
    expect((await t.post('/api/auth/logout', { all: true }, { token: c.access })).status).toBe(200);

    const events = (await rowsOf(user.id)).filter((row) => row.event_type.startsWith('session.'));
    expect(events).toMatchObject([
      { event_type: 'session.revoked', actor_user_id: user.id, subject_user_id: user.id, details: { session_id: sidOf(b.access) } },
      { event_type: 'session.logged_out', actor_user_id: user.id, details: { session_id: sidOf(a.access), all: false } },
      { event_type: 'session.logged_out', actor_user_id: user.id, details: { session_id: sidOf(c.access), all: true } },
    ]);
  });

  it('password change, reset requested and completed, and e-mail verification', async () => {
    const user = await register();
    const verifyToken = await mailToken(user.email, 'Confirm your e-mail address', 'verify-email');
    expect((await t.post('/api/auth/verify-email', { token: verifyToken })).status).toBe(200);

    const changedTo = 'changed-password-2';
    secrets.push(changedTo);
    expect(
      (await t.post('/api/auth/change-password', { current_password: user.password, new_password: changedTo }, { token: user.access }))
        .status,
    ).toBe(200);

    const requested = await traced('POST', '/api/auth/forgot-password', { email: user.email });
    expect(requested.res.status).toBe(200);
    const resetToken = await mailToken(user.email, 'Reset your password', 'reset-password');
    const resetTo = 'reset-password-3';
    secrets.push(resetTo);
    expect((await t.post('/api/auth/reset-password', { token: resetToken, new_password: resetTo })).status).toBe(200);

    expect(await rowsOf(user.id)).toMatchObject([
      { event_type: 'user.registered' },
      { event_type: 'email.verified', actor_user_id: user.id, subject_user_id: user.id },
      { event_type: 'password.changed', actor_user_id: user.id, subject_user_id: user.id },
      { event_type: 'password.reset_requested', actor_user_id: null, subject_user_id: user.id, request_id: requested.requestId },
      { event_type: 'password.reset_completed', actor_user_id: user.id, subject_user_id: user.id },
    ]);

    // A request for an e-mail no account has records nothing.
    const unknown = await traced('POST', '/api/auth/forgot-password', { email: uniqueEmail('nobody') });
    expect(unknown.res.status).toBe(200);
    expect(await rowsOfRequest(unknown.requestId)).toEqual([]);
  });

  it('what admins do to users: create, update, delete, restore', async () => {
    const created = await traced(
      'POST',
      '/api/users',
      { name: 'Made By Admin', email: uniqueEmail('made'), password: 'made-password-1' },
      { token: admin },
    );
    expect(created.res.status).toBe(201);
    secrets.push('made-password-1');
    const id: number = created.res.body.data.id;
    expect((await t.put(`/api/users/${id}`, { name: 'Renamed', is_active: false }, { token: admin })).status).toBe(200);
    expect((await t.put(`/api/users/${id}`, { password: 'other-password-2', role: 'admin' }, { token: admin })).status).toBe(200);
    secrets.push('other-password-2');
    expect((await t.delete(`/api/users/${id}`, { token: admin })).status).toBe(204);
    expect((await t.post(`/api/users/${id}/restore`, undefined, { token: admin })).status).toBe(200);

    const events = await rowsOf(id);
    expect(events).toMatchObject([
      {
        event_type: 'user.created',
        actor_user_id: adminId,
        subject_user_id: id,
        request_id: created.requestId,
        details: { role: 'user', is_active: true },
      },
      {
        event_type: 'user.updated',
        actor_user_id: adminId,
        subject_user_id: id,
        details: { fields: ['name', 'is_active'], is_active: false },
      },
      { event_type: 'user.updated', actor_user_id: adminId, subject_user_id: id, details: { fields: ['password', 'role'], role: 'admin' } },
      { event_type: 'user.deleted', actor_user_id: adminId, subject_user_id: id },
      { event_type: 'user.restored', actor_user_id: adminId, subject_user_id: id },
    ]);
    expect(events[1].details).not.toHaveProperty('role');
  });

  it('a user deleting themself', async () => {
    const user = await register();
    expect((await t.delete(`/api/users/${user.id}`, { token: user.access })).status).toBe(204);
    expect((await rowsOf(user.id)).at(-1)).toMatchObject({ event_type: 'user.deleted', actor_user_id: user.id, subject_user_id: user.id });
  });

  it('the admin account made at start-up, by no one', async () => {
    const [first] = await rowsOf(adminId);
    expect(first).toMatchObject({
      event_type: 'user.created',
      actor_user_id: null,
      subject_user_id: adminId,
      ip: null,
      request_id: null,
      details: { role: 'admin', source: 'ADMIN_EMAIL' },
    });
  });

  it('never a password, a token or a hash', async () => {
    const all = JSON.stringify(await rows());
    const hashes = await t.db.selectFrom('users').select('password_hash').execute();
    for (const secret of [...secrets, ...hashes.map((h) => h.password_hash)]) {
      expect(all).not.toContain(secret);
      // A JWT's signature alone is a secret too (bcrypt hashes have dots as well: only JWTs are split).
      if (secret.startsWith('eyJ')) expect(all).not.toContain(secret.split('.')[2]);
    }
  });
});

describe('a change that rolls back leaves no event', () => {
  it('an update to an e-mail that is taken', async () => {
    const [a, b] = [await register(), await register()];
    const before = await rowsOf(a.id);
    expectError(await t.put(`/api/users/${a.id}`, { name: 'Not Saved', email: b.email }, { token: admin }), 409, 'CONFLICT');
    expect(await rowsOf(a.id)).toEqual(before);
    const row = await t.db.selectFrom('users').select(['name', 'email']).where('id', '=', a.id).executeTakeFirstOrThrow();
    expect(row).toEqual({ name: 'Test User', email: a.email });
  });

  it('a reset refused after its token was taken, and a registration of a taken e-mail', async () => {
    const user = await register();
    expect((await t.post('/api/auth/forgot-password', { email: user.email })).status).toBe(200);
    const token = await mailToken(user.email, 'Reset your password', 'reset-password');
    // The e-mail as the new password: refused inside the transaction, after the token was consumed.
    expectError(await t.post('/api/auth/reset-password', { token, new_password: user.email }), 422, 'VALIDATION_ERROR');
    expect(await typesOf(user.id)).toEqual(['user.registered', 'password.reset_requested']);

    const registrations = async () => (await rows((q) => q.where('event_type', '=', 'user.registered'))).length;
    const before = await registrations();
    expectError(await t.post('/api/auth/register', { email: user.email, password: 'another-password-1', name: 'Twin' }), 409, 'CONFLICT');
    expect(await registrations()).toBe(before);
  });
  it('a registration whose commit fails after its event was written; nor is the event counted', async () => {
    // A deferred trigger fails the commit itself, after every statement of the transaction ran.
    await sql`create function fail_at_commit() returns trigger language plpgsql as $$ begin raise exception 'refused at commit'; end $$`.execute(
      t.db,
    );
    await sql`create constraint trigger fail_at_commit after insert on sessions deferrable initially deferred
              for each row when (new.user_agent = 'fail-at-commit') execute function fail_at_commit()`.execute(t.db);
    try {
      const scrape = async () =>
        (await request(t.app.koa.callback()).get('/metrics')).text.match(/^auth_events_total\{event_type="user.registered"\} (\d+)$/m)?.[1];
      const counted = await scrape();
      const email = uniqueEmail('never');
      const { res, requestId } = await traced(
        'POST',
        '/api/auth/register',
        { email, password: 'never-password-1', name: 'Never' },
        { headers: { 'User-Agent': 'fail-at-commit' } },
      );
      expectError(res, 500, 'INTERNAL_ERROR');
      expect(await rowsOfRequest(requestId)).toEqual([]);
      expect(await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst()).toBeUndefined();
      expect(await scrape()).toBe(counted);
    } finally {
      await sql`drop trigger fail_at_commit on sessions`.execute(t.db);
      await sql`drop function fail_at_commit()`.execute(t.db);
    }
  });
});

describe('GET /api/audit-events', () => {
  it('needs a token (401) and the admin role (403)', async () => {
    const res = await list({}, '');
    expectError(res, 401, 'UNAUTHORIZED');
    expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    const user = await register();
    expectError(await list({}, user.access), 403, 'FORBIDDEN');
    expectError(await list({ user_id: user.id }, user.access), 403, 'FORBIDDEN');
  });

  it.each([
    [{ event_type: 'login.maybe' }, 'query.event_type'],
    [{ user_id: 0 }, 'query.user_id'],
    [{ user_id: 'me' }, 'query.user_id'],
    [{ since: 'yesterday' }, 'query.since'],
    [{ until: '2026-01-02' }, 'query.until'],
    [{ since: '2026-12-31T23:59:60Z' }, 'query.since'],
    [{ since: '0000-01-01T00:00:00+01:00' }, 'query.since'],
    [{ until: '9999-12-31T23:00:00-02:00' }, 'query.until'],
    [{ limit: 0 }, 'query.limit'],
    [{ limit: 101 }, 'query.limit'],
    [{ cursor: -1 }, 'query.cursor'],
    [{ since: '2026-01-02T00:00:00Z', until: '2026-01-02T00:00:00Z' }, 'query.until'],
    [{ since: '2026-01-03T00:00:00Z', until: '2026-01-02T00:00:00Z' }, 'query.until'],
  ])('refuses %j with a 422 naming %s', async (params, field) => {
    const res = await list(params);
    expectError(res, 422, 'VALIDATION_ERROR');
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual([field]);
  });

  it('pages by id ascending with a cursor, and walks the whole trail without a gap or a repeat', async () => {
    const all = await rows();
    expect(all.length).toBeGreaterThan(t.config.pagination.defaultPageSize);

    const first = await list();
    expect(first.body.data.map((e: { id: number }) => e.id)).toEqual(
      all.slice(0, t.config.pagination.defaultPageSize).map((row) => row.id),
    );
    expect(first.body.meta).toEqual({ next_cursor: all[t.config.pagination.defaultPageSize - 1].id, has_more: true });

    const seen: unknown[] = [];
    let cursor = 0;
    for (;;) {
      const res = await list({ cursor, limit: 7 });
      expect(res.status).toBe(200);
      seen.push(...res.body.data);
      if (!res.body.meta.has_more) {
        expect(res.body.meta.next_cursor).toBeNull();
        break;
      }
      expect(res.body.meta.next_cursor).toBe(res.body.data.at(-1).id);
      cursor = res.body.meta.next_cursor;
    }
    expect(seen).toEqual(all.map(view));

    const past = await list({ cursor: all.at(-1)!.id });
    expect(past.body).toEqual({ success: true, data: [], meta: { next_cursor: null, has_more: false } });
  });

  it('filters by type, by user as actor or subject, and by time', async () => {
    const all = await rows();
    const byType = await list({ event_type: 'login.failed', limit: 100 });
    expect(byType.body.data).toEqual(
      all
        .filter((row) => row.event_type === 'login.failed')
        .map(view)
        .slice(0, 100),
    );

    // The admin acted on others (actor) and was created at start-up (subject).
    const byAdmin = await list({ user_id: adminId, limit: 100 });
    const expected = all.filter((row) => row.actor_user_id === adminId || row.subject_user_id === adminId).map(view);
    expect(byAdmin.body.data).toEqual(expected.slice(0, 100));
    expect(byAdmin.body.data.some((e: Row) => e.actor_user_id === adminId && e.subject_user_id !== adminId)).toBe(true);

    // since is inclusive and until exclusive: an instant of the trail's middle has events on both sides.
    const at = (row: Row) => new Date(row.occurred_at).getTime();
    const pivot = at(all[Math.floor(all.length / 2)]);
    const after = await list({ since: new Date(pivot).toISOString(), limit: 100 });
    const before = await list({ until: new Date(pivot).toISOString(), limit: 100 });
    expect(after.body.data).toEqual(
      all
        .filter((row) => at(row) >= pivot)
        .map(view)
        .slice(0, 100),
    );
    expect(before.body.data).toEqual(
      all
        .filter((row) => at(row) < pivot)
        .map(view)
        .slice(0, 100),
    );
    expect(after.body.data.length).toBeGreaterThan(0);
    expect(before.body.data.length).toBeGreaterThan(0);

    // Filters combine.
    const combined = await list({
      event_type: 'user.created',
      user_id: adminId,
      since: '0001-01-01T00:00:00Z',
      until: '9999-12-31T23:59:59Z',
    });
    expect(combined.body.data.length).toBeGreaterThanOrEqual(2);
    for (const event of combined.body.data) expect(event.event_type).toBe('user.created');
  });

  it('keeps the events of a user who is gone', async () => {
    const user = await register();
    expect((await t.delete(`/api/users/${user.id}`, { token: admin })).status).toBe(204);
    // Even a row removed by hand, outside the service, leaves its history.
    await sql`delete from users where id = ${user.id}`.execute(t.db);
    const res = await list({ user_id: user.id });
    expect(res.body.data.map((e: Row) => e.event_type)).toEqual(['user.registered', 'user.deleted']);
  });
});

describe('AUDIT_RETENTION_DAYS', () => {
  it('purges events older than the setting and keeps the rest', async () => {
    const first = await startTestApp();
    let second: TestContext | undefined;
    try {
      const table = (c: TestContext) => c.db.withTables<{ audit_events: AuditEventTable }>();
      const row = { actor_user_id: null, subject_user_id: null, ip: null, user_agent: null, request_id: null, details: '{}' };
      await table(first)
        .insertInto('audit_events')
        .values([
          { ...row, event_type: 'login.failed', occurred_at: sql<Date>`now() - interval '31 days'` },
          { ...row, event_type: 'login.failed', occurred_at: sql<Date>`now() - interval '40 days'` },
          { ...row, event_type: 'login.succeeded', occurred_at: sql<Date>`now() - interval '29 days'` },
        ])
        .execute();
      const types = async (c: TestContext) =>
        (await table(c).selectFrom('audit_events').select('event_type').orderBy('id').execute()).map((r) => r.event_type);
      expect(await types(first)).toEqual(['user.created', 'login.failed', 'login.failed', 'login.succeeded']);
      await first.stop();

      second = await startTestApp({ AUDIT_RETENTION_DAYS: '30' }, { sameDatabaseAs: first });
      // Housekeeping purges on its schedule too; this pass runs now.
      await second.app.housekeeping.purge();
      expect(await types(second)).toEqual(['user.created', 'login.succeeded']);
    } finally {
      await second?.stop();
      await first.close();
    }
  });
});
