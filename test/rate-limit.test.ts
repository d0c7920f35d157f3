import { sql } from 'kysely';
import request from 'supertest';
import { startTestApp, uniqueEmail, type Response, type TestContext } from './support/app.js';

// ---------------------------------------------------------------------------------------------
// Helpers

/** The refusal names the budget that ran out: the credential one or the general one, with its size. */
const rateLimitedBody = (limit: number) => ({
  success: false,
  error: {
    code: 'RATE_LIMITED',
    message: expect.stringMatching(
      new RegExp(
        `^Too many requests: this client has used its ${limit} (sign-in and credential )?requests a minute \\((AUTH_)?RATE_LIMIT_PER_MINUTE\\)$`,
      ),
    ),
  },
});
const LOCKED_BODY = {
  success: false,
  error: {
    code: 'RATE_LIMITED',
    message:
      'Too many failed sign-ins to this account from this client: locked out for 15 minutes (LOGIN_MAX_FAILURES, LOGIN_LOCKOUT_MINUTES)',
  },
};

let nextAddress = 1;
/** A client address of its own, so that each test has fresh per-IP budgets (with TRUST_PROXY=true). */
const freshIp = () => {
  const n = nextAddress++;
  return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
};
const from = (ip: string) => ({ headers: { 'X-Forwarded-For': ip } });

const int = (res: Response, name: string) => Number(res.headers[name.toLowerCase()]);

/** The RateLimit-* headers of a counted response. */
function expectBudget(res: Response, limit: number, remaining: number): void {
  expect(res.headers['ratelimit-limit']).toBe(String(limit));
  expect(res.headers['ratelimit-remaining']).toBe(String(remaining));
  expect(res.headers['ratelimit-reset']).toMatch(/^\d+$/);
  expect(int(res, 'RateLimit-Reset')).toBeGreaterThanOrEqual(0);
  expect(int(res, 'RateLimit-Reset')).toBeLessThanOrEqual(60);
}

function expectNoBudget(res: Response): void {
  expect(res.headers).not.toHaveProperty('ratelimit-limit');
  expect(res.headers).not.toHaveProperty('ratelimit-remaining');
  expect(res.headers).not.toHaveProperty('ratelimit-reset');
}

/** A per-IP 429: the envelope, Retry-After in whole seconds within the minute, an empty budget. */
function expectIpLimited(res: Response, limit: number): void {
  expect(res.status).toBe(429);
  expect(res.body).toEqual(rateLimitedBody(limit));
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.headers['retry-after']).toMatch(/^\d+$/);
  expect(int(res, 'Retry-After')).toBeGreaterThanOrEqual(1);
  expect(int(res, 'Retry-After')).toBeLessThanOrEqual(60);
  expectBudget(res, limit, 0);
}

/** A lockout 429: the envelope and Retry-After close to the whole lockout. */
function expectLocked(res: Response, lockoutSeconds: number): void {
  expect(res.status).toBe(429);
  expect(res.body).toEqual(LOCKED_BODY);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.headers['retry-after']).toMatch(/^\d+$/);
  expect(int(res, 'Retry-After')).toBeGreaterThan(lockoutSeconds - 10);
  expect(int(res, 'Retry-After')).toBeLessThanOrEqual(lockoutSeconds);
}

const loginJson = (t: TestContext, email: string, password: string, ip = freshIp()) =>
  t.post('/api/auth/login/json', { email, password }, from(ip));
const loginForm = (t: TestContext, email: string, password: string, ip = freshIp()) =>
  t.post('/api/auth/login', { username: email, password }, { form: true, ...from(ip) });
const WRONG = 'wrong-password-1';

/** Registers a user from an address of its own, leaving the test's addresses untouched. */
async function registerFreshOn(t: TestContext) {
  const email = uniqueEmail();
  const res = await t.post('/api/auth/register', { email, password: 'password-123', name: 'Test User' }, from(freshIp()));
  expect(res.status).toBe(201);
  return { email, password: 'password-123', access: res.body.data.access_token as string };
}

/** Header names, minus those that differ per response by nature. */
const headerShape = (res: Response) =>
  Object.keys(res.headers)
    .filter((name) => !['date', 'x-request-id', 'content-length', 'connection', 'keep-alive'].includes(name))
    .sort();

// ---------------------------------------------------------------------------------------------
// One app behind a trusted proxy: each test takes its own addresses, so budgets never mix.

describe('rate limits behind a trusted proxy', () => {
  const AUTH_LIMIT = 3;
  const GENERAL_LIMIT = 5;
  const MAX_FAILURES = 3;
  let t: TestContext;

  beforeAll(async () => {
    t = await startTestApp({
      RATE_LIMIT_ENABLED: 'true',
      AUTH_RATE_LIMIT_PER_MINUTE: String(AUTH_LIMIT),
      RATE_LIMIT_PER_MINUTE: String(GENERAL_LIMIT),
      LOGIN_MAX_FAILURES: String(MAX_FAILURES),
      TRUST_PROXY: 'true',
    });
  });
  afterAll(() => t.close());

  const registerFresh = () => registerFreshOn(t);

  describe('per-IP limit on the credential operations', () => {
    test('N requests pass with a shrinking budget, then 429 RATE_LIMITED with Retry-After', async () => {
      const ip = freshIp();
      for (let i = 1; i <= AUTH_LIMIT; i++) {
        const res = await t.post('/api/auth/forgot-password', { email: uniqueEmail() }, from(ip));
        expect(res.status).toBe(200);
        expectBudget(res, AUTH_LIMIT, AUTH_LIMIT - i);
      }
      const limited = await t.post('/api/auth/forgot-password', { email: uniqueEmail() }, from(ip));
      expectIpLimited(limited, AUTH_LIMIT);
      // Retry-After and RateLimit-Reset say the same thing: when the window ends.
      expect(Math.abs(int(limited, 'Retry-After') - int(limited, 'RateLimit-Reset'))).toBeLessThanOrEqual(1);
    });

    test('the credential operations share one budget per address', async () => {
      const ip = freshIp();
      const user = await registerFresh();
      expect((await t.post('/api/auth/login/json', { email: user.email, password: user.password }, from(ip))).status).toBe(200);
      expect((await t.post('/api/auth/refresh', { refresh_token: 'not-a-token' }, from(ip))).status).toBe(401);
      expect((await t.post('/api/auth/verify-email', { token: 'nope' }, from(ip))).status).toBe(400);
      expectIpLimited(
        await t.post('/api/auth/login', { username: user.email, password: user.password }, { form: true, ...from(ip) }),
        AUTH_LIMIT,
      );
      expectIpLimited(
        await t.post('/api/auth/register', { email: uniqueEmail(), password: 'password-123', name: 'X' }, from(ip)),
        AUTH_LIMIT,
      );
      expectIpLimited(await t.post('/api/auth/reset-password', { token: 'x', new_password: 'password-456' }, from(ip)), AUTH_LIMIT);
      expectIpLimited(await t.post('/api/auth/verify-email/resend', undefined, { token: user.access, ...from(ip) }), AUTH_LIMIT);
    });

    test('failed and invalid requests count and carry the headers too', async () => {
      const ip = freshIp();
      const invalid = await t.post('/api/auth/login/json', { email: 'a@example.com' }, from(ip));
      expect(invalid.status).toBe(422);
      expectBudget(invalid, AUTH_LIMIT, AUTH_LIMIT - 1);
      const wrong = await t.post('/api/auth/login/json', { email: uniqueEmail(), password: WRONG }, from(ip));
      expect(wrong.status).toBe(401);
      expectBudget(wrong, AUTH_LIMIT, AUTH_LIMIT - 2);
    });

    test('a limited request does no work: the account is not created', async () => {
      const ip = freshIp();
      for (let i = 0; i < AUTH_LIMIT; i++) await t.post('/api/auth/forgot-password', { email: uniqueEmail() }, from(ip));
      const email = uniqueEmail();
      expectIpLimited(await t.post('/api/auth/register', { email, password: 'password-123', name: 'X' }, from(ip)), AUTH_LIMIT);
      const row = await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst();
      expect(row).toBeUndefined();
    });
  });

  describe('operations that hash a password', () => {
    test('change-password, user creation and an update that sets a password spend the credential budget; other updates do not', async () => {
      const ip = freshIp();
      const user = await registerFresh();
      const admin = await t.adminToken();
      const changed = await t.post(
        '/api/auth/change-password',
        { current_password: 'not-the-password-9', new_password: 'another-password-1' },
        { token: user.access, ...from(ip) },
      );
      expect(changed.status).toBe(400);
      expectBudget(changed, AUTH_LIMIT, AUTH_LIMIT - 1);
      const id = Number(JSON.parse(Buffer.from(user.access.split('.')[1], 'base64url').toString()).sub);
      const renamed = await t.put(`/api/users/${id}`, { name: 'Renamed' }, { token: admin, ...from(ip) });
      expect(renamed.status).toBe(200);
      expectBudget(renamed, GENERAL_LIMIT, GENERAL_LIMIT - 1);
      const password = await t.put(`/api/users/${id}`, { password: 'set-by-admin-2' }, { token: admin, ...from(ip) });
      expect(password.status).toBe(200);
      expectBudget(password, AUTH_LIMIT, AUTH_LIMIT - 2);
      const body = { name: 'Made', email: uniqueEmail('made'), password: 'made-password-3' };
      const created = await t.post('/api/users', body, { token: admin, ...from(ip) });
      expect(created.status).toBe(201);
      expectBudget(created, AUTH_LIMIT, 0);
      const email = uniqueEmail('refused');
      expectIpLimited(await t.post('/api/users', { ...body, email }, { token: admin, ...from(ip) }), AUTH_LIMIT);
      expectIpLimited(await t.put(`/api/users/${id}`, { password: 'set-by-admin-4' }, { token: admin, ...from(ip) }), AUTH_LIMIT);
      expect(await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst()).toBeUndefined();
      expect((await t.put(`/api/users/${id}`, { name: 'Still Fine' }, { token: admin, ...from(ip) })).status).toBe(200);
    });

    test('an IPv6 client is counted by its /64', async () => {
      for (let i = 0; i < AUTH_LIMIT; i++) {
        expect((await t.post('/api/auth/forgot-password', { email: uniqueEmail() }, from(`2001:db8:42:1::${i + 1}`))).status).toBe(200);
      }
      expectIpLimited(await t.post('/api/auth/forgot-password', { email: uniqueEmail() }, from('2001:db8:42:1:abcd::1')), AUTH_LIMIT);
      expect((await t.post('/api/auth/forgot-password', { email: uniqueEmail() }, from('2001:db8:42:2::1'))).status).toBe(200);
    });
  });

  describe('general per-IP limit', () => {
    test('GET /api/auth/me: RATE_LIMIT_PER_MINUTE requests, then 429', async () => {
      const ip = freshIp();
      const user = await registerFresh();
      for (let i = 1; i <= GENERAL_LIMIT; i++) {
        const res = await t.get('/api/auth/me', { token: user.access, ...from(ip) });
        expect(res.status).toBe(200);
        expectBudget(res, GENERAL_LIMIT, GENERAL_LIMIT - i);
      }
      const limited = await t.get('/api/auth/me', { token: user.access, ...from(ip) });
      expectIpLimited(limited, GENERAL_LIMIT);
      // Another operation on the general budget is limited as well; unauthenticated requests count.
      expectIpLimited(await t.get('/api/auth/sessions', { token: user.access, ...from(ip) }), GENERAL_LIMIT);
      expectIpLimited(await t.get('/api/users/1', from(ip)), GENERAL_LIMIT);
    });

    test('the general and the credential budgets are separate', async () => {
      const ip = freshIp();
      const user = await registerFresh();
      for (let i = 0; i < AUTH_LIMIT; i++) await t.post('/api/auth/forgot-password', { email: uniqueEmail() }, from(ip));
      expectIpLimited(await t.post('/api/auth/forgot-password', { email: uniqueEmail() }, from(ip)), AUTH_LIMIT);
      const me = await t.get('/api/auth/me', { token: user.access, ...from(ip) });
      expect(me.status).toBe(200);
      expectBudget(me, GENERAL_LIMIT, GENERAL_LIMIT - 1);
    });
  });

  describe('never limited, never counted', () => {
    const unlimited = ['/health', '/health/', '/health/live', '/health/ready', '/openapi.json', '/docs', '/redoc'];
    /** Docs routes are not in the contract, so they bypass the harness's contract check. */
    const getAny = async (path: string, ip: string): Promise<Response> => {
      if (path.startsWith('/health')) return t.get(path, from(ip));
      const res = await request(t.app.koa.callback()).get(path).set('X-Forwarded-For', ip);
      return { status: res.status, headers: res.headers, body: res.body };
    };

    test('health and docs answer past the limit, without RateLimit headers', async () => {
      const ip = freshIp();
      const user = await registerFresh();
      for (let i = 0; i < GENERAL_LIMIT; i++) await t.get('/api/auth/me', { token: user.access, ...from(ip) });
      expectIpLimited(await t.get('/api/auth/me', { token: user.access, ...from(ip) }), GENERAL_LIMIT);
      for (let round = 0; round < 2; round++) {
        for (const path of unlimited) {
          const res = await getAny(path, ip);
          expect(res.status).toBe(200);
          expectNoBudget(res);
        }
      }
    });

    test('health and docs requests do not use up the budget', async () => {
      const ip = freshIp();
      const user = await registerFresh();
      for (let round = 0; round < 2; round++) {
        for (const path of unlimited) expect((await getAny(path, ip)).status).toBe(200);
      }
      const me = await t.get('/api/auth/me', { token: user.access, ...from(ip) });
      expect(me.status).toBe(200);
      expectBudget(me, GENERAL_LIMIT, GENERAL_LIMIT - 1);
    });
  });

  describe('X-Forwarded-For is the key when TRUST_PROXY=true', () => {
    test('different forwarded addresses get separate budgets', async () => {
      const [a, b] = [freshIp(), freshIp()];
      for (let i = 0; i < AUTH_LIMIT; i++) await t.post('/api/auth/forgot-password', { email: uniqueEmail() }, from(a));
      expectIpLimited(await t.post('/api/auth/forgot-password', { email: uniqueEmail() }, from(a)), AUTH_LIMIT);
      const other = await t.post('/api/auth/forgot-password', { email: uniqueEmail() }, from(b));
      expect(other.status).toBe(200);
      expectBudget(other, AUTH_LIMIT, AUTH_LIMIT - 1);
      // The client is the address the proxy appended last; what the client itself sent before it
      // (here a made-up address) does not buy a fresh budget.
      const chained = await t.post('/api/auth/forgot-password', { email: uniqueEmail() }, from(`192.0.2.1, ${a}`));
      expectIpLimited(chained, AUTH_LIMIT);
    });
  });
});

// ---------------------------------------------------------------------------------------------
// The lockout of one client: each test's attacker is one address, with the per-IP budget out of the
// way (test/lockout.test.ts covers the other clients, IPv6 and the account-wide limit).

describe('lockout of one client after failed logins', () => {
  const AUTH_LIMIT = 1000;
  const MAX_FAILURES = 3;
  const LOCKOUT_SECONDS = 15 * 60;
  let t: TestContext;

  beforeAll(async () => {
    t = await startTestApp({
      RATE_LIMIT_ENABLED: 'true',
      AUTH_RATE_LIMIT_PER_MINUTE: String(AUTH_LIMIT),
      LOGIN_MAX_FAILURES: String(MAX_FAILURES),
      TRUST_PROXY: 'true',
    });
  });
  afterAll(() => t.close());

  const registerFresh = () => registerFreshOn(t);

  test(`after ${MAX_FAILURES} failures the right password answers 429 to that client; another client signs in`, async () => {
    const user = await registerFresh();
    const attacker = freshIp();
    for (let i = 0; i < MAX_FAILURES; i++) expect((await loginJson(t, user.email, WRONG, attacker)).status).toBe(401);
    const json = await loginJson(t, user.email, user.password, attacker);
    expectLocked(json, LOCKOUT_SECONDS);
    // A counted route still carries its per-IP budget next to the lockout.
    expectBudget(json, AUTH_LIMIT, AUTH_LIMIT - 1 - MAX_FAILURES);
    expectLocked(await loginForm(t, user.email, user.password, attacker), LOCKOUT_SECONDS);
    expectLocked(await loginJson(t, user.email, WRONG, attacker), LOCKOUT_SECONDS);
    // The lockout is about that client's logins: the owner, elsewhere, signs in, and tokens keep working.
    expect((await loginJson(t, user.email, user.password)).status).toBe(200);
    expect((await t.get('/api/auth/me', { token: user.access, ...from(freshIp()) })).status).toBe(200);
  });

  test('both login operations count towards the same lockout', async () => {
    const user = await registerFresh();
    const attacker = freshIp();
    expect((await loginForm(t, user.email, WRONG, attacker)).status).toBe(401);
    expect((await loginJson(t, user.email, WRONG, attacker)).status).toBe(401);
    expect((await loginForm(t, user.email, WRONG, attacker)).status).toBe(401);
    expectLocked(await loginJson(t, user.email, user.password, attacker), LOCKOUT_SECONDS);
  });

  test('the key is the normalized e-mail', async () => {
    const user = await registerFresh();
    const attacker = freshIp();
    const shouting = `  ${user.email.toUpperCase()}  `;
    for (let i = 0; i < MAX_FAILURES; i++) expect((await loginForm(t, shouting, WRONG, attacker)).status).toBe(401);
    expectLocked(await loginJson(t, user.email, user.password, attacker), LOCKOUT_SECONDS);
  });

  test('an unknown e-mail is counted and locked exactly like a known one', async () => {
    const known = await registerFresh();
    const unknown = uniqueEmail('nobody');
    const attacker = freshIp();
    const failures: Response[][] = [[], []];
    for (let i = 0; i < MAX_FAILURES; i++) {
      failures[0].push(await loginJson(t, known.email, WRONG, attacker));
      failures[1].push(await loginJson(t, unknown, WRONG, attacker));
    }
    for (let i = 0; i < MAX_FAILURES; i++) {
      expect(failures[1][i].status).toBe(failures[0][i].status);
      expect(failures[1][i].body).toEqual(failures[0][i].body);
      expect(headerShape(failures[1][i])).toEqual(headerShape(failures[0][i]));
    }
    const [lockedKnown, lockedUnknown] = [
      await loginJson(t, known.email, known.password, attacker),
      await loginJson(t, unknown, 'any-password-1', attacker),
    ];
    expectLocked(lockedKnown, LOCKOUT_SECONDS);
    expectLocked(lockedUnknown, LOCKOUT_SECONDS);
    expect(lockedUnknown.body).toEqual(lockedKnown.body);
    expect(headerShape(lockedUnknown)).toEqual(headerShape(lockedKnown));
    expect(Math.abs(int(lockedUnknown, 'Retry-After') - int(lockedKnown, 'Retry-After'))).toBeLessThanOrEqual(1);
    // Registering the locked e-mail afterwards does not lift the lock.
    const res = await t.post('/api/auth/register', { email: unknown, password: 'password-123', name: 'Late' }, from(freshIp()));
    expect(res.status).toBe(201);
    expectLocked(await loginJson(t, unknown, 'password-123', attacker), LOCKOUT_SECONDS);
  });

  test('a success before the threshold resets the count', async () => {
    const user = await registerFresh();
    const client = freshIp();
    for (let i = 0; i < MAX_FAILURES - 1; i++) expect((await loginJson(t, user.email, WRONG, client)).status).toBe(401);
    expect((await loginForm(t, user.email, user.password, client)).status).toBe(200);
    // A full run of failures again, less one: still not locked.
    for (let i = 0; i < MAX_FAILURES - 1; i++) expect((await loginJson(t, user.email, WRONG, client)).status).toBe(401);
    expect((await loginJson(t, user.email, user.password, client)).status).toBe(200);
    // And the threshold still applies from zero.
    for (let i = 0; i < MAX_FAILURES; i++) expect((await loginJson(t, user.email, WRONG, client)).status).toBe(401);
    expectLocked(await loginJson(t, user.email, user.password, client), LOCKOUT_SECONDS);
  });

  test('validation failures (422) do not count', async () => {
    const user = await registerFresh();
    const client = freshIp();
    for (let i = 0; i < MAX_FAILURES + 2; i++) {
      expect((await t.post('/api/auth/login/json', { email: user.email }, from(client))).status).toBe(422);
      expect((await t.post('/api/auth/login/json', { email: user.email, password: '' }, from(client))).status).toBe(422);
    }
    expect((await loginJson(t, user.email, user.password, client)).status).toBe(200);
  });

  test('one account locked leaves the others alone', async () => {
    const [locked, other] = [await registerFresh(), await registerFresh()];
    const attacker = freshIp();
    for (let i = 0; i < MAX_FAILURES; i++) await loginJson(t, locked.email, WRONG, attacker);
    expectLocked(await loginJson(t, locked.email, locked.password, attacker), LOCKOUT_SECONDS);
    expect((await loginJson(t, other.email, other.password, attacker)).status).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------

describe('TRUST_PROXY=false', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await startTestApp({ RATE_LIMIT_ENABLED: 'true', AUTH_RATE_LIMIT_PER_MINUTE: '2', TRUST_PROXY: 'false' });
  });
  afterAll(() => t.close());

  test('X-Forwarded-For is ignored: every value shares the connection address budget', async () => {
    expect((await t.post('/api/auth/forgot-password', { email: uniqueEmail() }, from('10.1.0.1'))).status).toBe(200);
    expect((await t.post('/api/auth/forgot-password', { email: uniqueEmail() }, from('10.1.0.2'))).status).toBe(200);
    expectIpLimited(await t.post('/api/auth/forgot-password', { email: uniqueEmail() }, from('10.1.0.3')), 2);
    expectIpLimited(await t.post('/api/auth/forgot-password', { email: uniqueEmail() }), 2);
  });
});

describe('RATE_LIMIT_ENABLED=false', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await startTestApp({
      RATE_LIMIT_ENABLED: 'false',
      AUTH_RATE_LIMIT_PER_MINUTE: '1',
      RATE_LIMIT_PER_MINUTE: '1',
      LOGIN_MAX_FAILURES: '1',
    });
  });
  afterAll(() => t.close());

  test('nothing is limited, counted or locked', async () => {
    const user = await t.register();
    for (let i = 0; i < 4; i++) {
      const forgot = await t.post('/api/auth/forgot-password', { email: uniqueEmail() });
      expect(forgot.status).toBe(200);
      expectNoBudget(forgot);
      const me = await t.get('/api/auth/me', { token: user.access });
      expect(me.status).toBe(200);
      expectNoBudget(me);
      expect((await t.post('/api/auth/login/json', { email: user.email, password: WRONG })).status).toBe(401);
    }
    expect((await t.post('/api/auth/login/json', { email: user.email, password: user.password })).status).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------
// RATE_LIMIT_STORE=postgres: two processes on one database share their counters.

const onPostgres = process.env.TEST_DATABASE_KIND === 'postgres';
if (!onPostgres) {
  describe('RATE_LIMIT_STORE=postgres', () => {
    console.log(
      'rate-limit: skipping the shared PostgreSQL store tests: the embedded database serves one process only (run with TEST_DATABASE_URL)',
    );
    test.skip('needs PostgreSQL (TEST_DATABASE_URL): the embedded database serves one process only', () => {});
  });
} else {
  describe('RATE_LIMIT_STORE=postgres', () => {
    const env = {
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_STORE: 'postgres',
      AUTH_RATE_LIMIT_PER_MINUTE: '4',
      RATE_LIMIT_PER_MINUTE: '6',
      LOGIN_MAX_FAILURES: '3',
      TRUST_PROXY: 'true',
    };
    let a: TestContext;
    let b: TestContext;
    beforeAll(async () => {
      a = await startTestApp(env);
      b = await startTestApp(env, { sameDatabaseAs: a });
    });
    afterAll(async () => {
      await b?.close();
      await a?.close();
    });

    test('requests split across two apps count against one budget', async () => {
      const ip = freshIp();
      const apps = [a, b, a, b];
      for (let i = 0; i < apps.length; i++) {
        const res = await apps[i].post('/api/auth/forgot-password', { email: uniqueEmail() }, from(ip));
        expect(res.status).toBe(200);
        expectBudget(res, 4, 3 - i);
      }
      expectIpLimited(await a.post('/api/auth/forgot-password', { email: uniqueEmail() }, from(ip)), 4);
      expectIpLimited(await b.post('/api/auth/forgot-password', { email: uniqueEmail() }, from(ip)), 4);
    });

    test('the general budget is shared too', async () => {
      const ip = freshIp();
      const res = await a.post('/api/auth/register', { email: uniqueEmail(), password: 'password-123', name: 'Shared' }, from(freshIp()));
      const token = res.body.data.access_token as string;
      for (let i = 0; i < 6; i++) expect((await (i % 2 ? a : b).get('/api/auth/me', { token, ...from(ip) })).status).toBe(200);
      expectIpLimited(await a.get('/api/auth/me', { token, ...from(ip) }), 6);
      expectIpLimited(await b.get('/api/auth/me', { token, ...from(ip) }), 6);
    });

    test('the counters live in the database', async () => {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from rate_limits`.execute(a.db);
      expect(rows[0].n).toBeGreaterThan(0);
    });
  });
}
