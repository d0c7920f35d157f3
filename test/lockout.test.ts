import type { AuditEventTable } from '../src/audit/audit-repository.js';
import { startTestApp, uniqueEmail, type Response, type TestContext } from './support/app.js';
import { expectError } from './support/expect.js';
import { linkToken, startSmtpServer, type TestSmtpServer } from './support/smtp.js';

// Each client is an X-Forwarded-For address behind a trusted proxy; the per-IP budget is out of the
// way so that only the lockout answers 429.
const MAX_FAILURES = 5;
const ACCOUNT_MAX_FAILURES = 12;
const LOCKOUT_SECONDS = 15 * 60;
const ENV = {
  RATE_LIMIT_ENABLED: 'true',
  AUTH_RATE_LIMIT_PER_MINUTE: '100000',
  RATE_LIMIT_PER_MINUTE: '100000',
  LOGIN_MAX_FAILURES: String(MAX_FAILURES),
  LOGIN_ACCOUNT_MAX_FAILURES: String(ACCOUNT_MAX_FAILURES),
  TRUST_PROXY: 'true',
  APP_URL: 'https://app.example.test',
  MAIL_POLL_INTERVAL_MS: '100',
};
const WRONG = 'wrong-password-1';
/** The refusal names the lock: this client's on the account (LOCKOUT_SECONDS), or the whole account's (an hour). */
const lockedBody = (seconds: number) => ({
  success: false,
  error: {
    code: 'RATE_LIMITED',
    message:
      seconds === 3600
        ? 'Too many failed sign-ins to this account from any client: the account is locked for an hour (LOGIN_ACCOUNT_MAX_FAILURES); a password reset lifts it'
        : `Too many failed sign-ins to this account from this client: locked out for ${seconds / 60} minutes (LOGIN_MAX_FAILURES, LOGIN_LOCKOUT_MINUTES)`,
  },
});
const INVALID_CREDENTIALS_BODY = { success: false, error: { code: 'INVALID_CREDENTIALS', message: 'Invalid email or password' } };

let smtp: TestSmtpServer;
let t: TestContext;
beforeAll(async () => {
  smtp = await startSmtpServer();
  t = await startTestApp({ ...ENV, SMTP_URL: smtp.url });
});
afterAll(async () => {
  await t?.close();
  await smtp?.close();
});

let nextAddress = 1;
const freshIp = () => {
  const n = nextAddress++;
  return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
};
const from = (ip: string) => ({ headers: { 'X-Forwarded-For': ip } });
const login = (app: TestContext, email: string, password: string, ip: string) =>
  app.post('/api/auth/login/json', { email, password }, from(ip));

function expectLocked(res: Response, maxSeconds = LOCKOUT_SECONDS): void {
  expectError(res, 429, 'RATE_LIMITED');
  expect(res.body).toEqual(lockedBody(maxSeconds));
  expect(Number(res.headers['retry-after'])).toBeGreaterThan(maxSeconds - 30);
  expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(maxSeconds);
}

function expectRejected(res: Response): void {
  expect(res.status).toBe(401);
  expect(res.body).toEqual(INVALID_CREDENTIALS_BODY);
}

async function registerFresh(app = t) {
  const email = uniqueEmail('lockout');
  const res = await app.post('/api/auth/register', { email, password: 'the-owner-password-1', name: 'Owner' }, from(freshIp()));
  expect(res.status).toBe(201);
  return { id: res.body.data.user.id as number, email, password: 'the-owner-password-1', access: res.body.data.access_token as string };
}

/** The audit rows a user's failed and locked logins left, oldest first. */
const failureRows = (userId: number, app = t) =>
  app.db
    .withTables<{ audit_events: AuditEventTable }>()
    .selectFrom('audit_events')
    .select(['event_type', 'ip', 'details'])
    .where('subject_user_id', '=', userId)
    .where('event_type', 'in', ['login.failed', 'login.locked'])
    .orderBy('id')
    .execute();

describe('a lockout attempt from another client', () => {
  it('locks that client out of that account only; the owner signs in from theirs', async () => {
    const owner = await registerFresh();
    const [attacker, home] = [freshIp(), freshIp()];
    for (let i = 0; i < MAX_FAILURES; i++) expectRejected(await login(t, owner.email, WRONG, attacker));
    // The attacker is locked out, even with the right password.
    expectLocked(await login(t, owner.email, owner.password, attacker));
    expectLocked(await t.post('/api/auth/login', { username: owner.email, password: owner.password }, { form: true, ...from(attacker) }));
    // The owner, from their own address, is not.
    const res = await login(t, owner.email, owner.password, home);
    expect(res.status).toBe(200);
    expect(res.body.data.user.id).toBe(owner.id);
    // The attacker's other targets are untouched too.
    const other = await registerFresh();
    expect((await login(t, other.email, other.password, attacker)).status).toBe(200);

    const rows = await failureRows(owner.id);
    expect(rows).toEqual([
      ...Array.from({ length: MAX_FAILURES }, () => ({
        event_type: 'login.failed',
        ip: attacker,
        details: { reason: 'invalid_credentials' },
      })),
      { event_type: 'login.locked', ip: attacker, details: { scope: 'client' } },
    ]);
  });

  it('counts two IPv6 addresses of one /64 as one client, another /64 apart, and an IPv4-mapped address as IPv4', async () => {
    const owner = await registerFresh();
    for (let i = 0; i < MAX_FAILURES; i++) expectRejected(await login(t, owner.email, WRONG, `2001:db8:7:${i % 2 ? 'a' : 'A'}::${i + 1}`));
    // Every address of 2001:db8:7:a::/64 is locked out, written any way.
    expectLocked(await login(t, owner.email, owner.password, '2001:db8:7:a:ffff:ffff:ffff:ffff'));
    expectLocked(await login(t, owner.email, owner.password, '2001:0db8:0007:000a:0000:0000:0000:0009'));
    // The next /64 is another client.
    expect((await login(t, owner.email, owner.password, '2001:db8:7:b::1')).status).toBe(200);

    const mapped = await registerFresh();
    const ip = freshIp();
    for (let i = 0; i < MAX_FAILURES; i++) expectRejected(await login(t, mapped.email, WRONG, i % 2 ? `::ffff:${ip}` : ip));
    expectLocked(await login(t, mapped.email, mapped.password, ip));
    expectLocked(await login(t, mapped.email, mapped.password, `::ffff:${ip}`));
  });
});

describe('parallel guesses', () => {
  it('20 at once from one client: exactly LOGIN_MAX_FAILURES are checked, the rest answer 429', async () => {
    const owner = await registerFresh();
    const attacker = freshIp();
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => login(t, owner.email, `${WRONG}-${i}`, attacker)));
    const rejected = answers.filter((res) => res.status === 401);
    const locked = answers.filter((res) => res.status === 429);
    expect([rejected.length, locked.length]).toEqual([MAX_FAILURES, 20 - MAX_FAILURES]);
    for (const res of rejected) expectRejected(res);
    for (const res of locked) expect(res.body).toEqual(lockedBody(LOCKOUT_SECONDS));
    // One failure per checked guess, and one lock.
    const rows = await failureRows(owner.id);
    expect(rows.filter((row) => row.event_type === 'login.failed')).toHaveLength(MAX_FAILURES);
    expect(rows.filter((row) => row.event_type === 'login.locked')).toEqual([
      { event_type: 'login.locked', ip: attacker, details: { scope: 'client' } },
    ]);
    expectLocked(await login(t, owner.email, owner.password, attacker));
    expect((await login(t, owner.email, owner.password, freshIp())).status).toBe(200);
  });
});

describe('the account-wide limit', () => {
  it('locks the account for everyone past LOGIN_ACCOUNT_MAX_FAILURES; a completed reset lifts it', async () => {
    const owner = await registerFresh();
    // Many clients, each staying under its own limit.
    let failures = 0;
    while (failures < ACCOUNT_MAX_FAILURES) {
      const client = freshIp();
      for (let i = 0; i < MAX_FAILURES - 1 && failures < ACCOUNT_MAX_FAILURES; i++, failures++) {
        expectRejected(await login(t, owner.email, WRONG, client));
      }
    }
    const home = freshIp();
    expectLocked(await login(t, owner.email, owner.password, home), 3600);
    expectLocked(await login(t, owner.email, owner.password, freshIp()), 3600);
    const rows = await failureRows(owner.id);
    expect(rows.filter((row) => row.event_type === 'login.failed')).toHaveLength(ACCOUNT_MAX_FAILURES);
    expect(rows.filter((row) => row.event_type === 'login.locked')).toEqual([expect.objectContaining({ details: { scope: 'account' } })]);

    // The owner resets the password by mail, and signs in again.
    expect((await t.post('/api/auth/forgot-password', { email: owner.email }, from(home))).status).toBe(200);
    const mail = await smtp.waitFor((m) => m.to.includes(owner.email) && m.subject === 'Reset your password', 10_000);
    const reset = await t.post(
      '/api/auth/reset-password',
      { token: linkToken(mail, 'reset-password'), new_password: 'a-new-owner-password-2' },
      from(home),
    );
    expect(reset.status).toBe(200);
    const res = await login(t, owner.email, 'a-new-owner-password-2', freshIp());
    expect(res.status).toBe(200);
    expect(res.body.data.user.id).toBe(owner.id);
  });
});

describe('a wrong current password at change-password', () => {
  it('counts like a failed login of that account from that client', async () => {
    const owner = await registerFresh();
    const client = freshIp();
    const change = (current: string) =>
      t.post(
        '/api/auth/change-password',
        { current_password: current, new_password: 'another-password-3' },
        { token: owner.access, ...from(client) },
      );
    for (let i = 0; i < MAX_FAILURES; i++) expectError(await change(WRONG), 400, 'INVALID_PASSWORD');
    expectLocked(await change(owner.password));
    expectLocked(await login(t, owner.email, owner.password, client));
    // Nothing changed: the old password still signs in, from another client.
    expect((await login(t, owner.email, owner.password, freshIp())).status).toBe(200);
  });
});

// Two processes on one database, counting in PostgreSQL.
const onPostgres = process.env.TEST_DATABASE_KIND === 'postgres';
(onPostgres ? describe : describe.skip)('RATE_LIMIT_STORE=postgres, two processes', () => {
  let a: TestContext;
  let b: TestContext;
  beforeAll(async () => {
    a = await startTestApp({ ...ENV, RATE_LIMIT_STORE: 'postgres' });
    b = await startTestApp({ ...ENV, RATE_LIMIT_STORE: 'postgres' }, { sameDatabaseAs: a });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('parallel guesses split across both are checked at most LOGIN_MAX_FAILURES times', async () => {
    const owner = await registerFresh(a);
    const attacker = freshIp();
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => login(i % 2 ? a : b, owner.email, `${WRONG}-${i}`, attacker)));
    expect(answers.filter((res) => res.status === 401)).toHaveLength(MAX_FAILURES);
    expect(answers.filter((res) => res.status === 429)).toHaveLength(20 - MAX_FAILURES);
    expect((await failureRows(owner.id, a)).filter((row) => row.event_type === 'login.failed')).toHaveLength(MAX_FAILURES);
    expectLocked(await login(a, owner.email, owner.password, attacker));
    expectLocked(await login(b, owner.email, owner.password, attacker));
    expect((await login(b, owner.email, owner.password, freshIp())).status).toBe(200);
  });

  it('a lockout earned on one holds on the other; a success on either resets the count', async () => {
    const owner = await registerFresh(a);
    const client = freshIp();
    expectRejected(await login(a, owner.email, WRONG, client));
    expectRejected(await login(b, owner.email, WRONG, client));
    expect((await login(a, owner.email, owner.password, client)).status).toBe(200);
    for (let i = 0; i < MAX_FAILURES; i++) expectRejected(await login(i % 2 ? a : b, owner.email, WRONG, client));
    expectLocked(await login(a, owner.email, owner.password, client));
    expectLocked(await login(b, owner.email, owner.password, client));
  });
});
