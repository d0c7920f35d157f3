import { hash } from '@node-rs/bcrypt';
import { sql } from 'kysely';
import request from 'supertest';
import { createApp, type App } from '../src/app.js';
import { createLogger } from '../src/logger.js';
import { startTestApp, uniqueEmail, type Response, type TestContext } from './support/app.js';
import { assertMatchesContract } from './support/contract.js';
import { expectError } from './support/expect.js';

// One hash at a time and room for one more waiting: a burst of parallel password operations is
// partly refused at once instead of queueing. Cost 12 (some 250 ms) makes each hash outlast the burst's
// arrival, also on a loaded machine and with the lockout's counters in PostgreSQL. The
// login lockout is on (three failures), with per-IP limits out of the way.
let t: TestContext;
beforeAll(async () => {
  t = await startTestApp({
    BCRYPT_COST: '12',
    PASSWORD_HASH_CONCURRENCY: '1',
    PASSWORD_HASH_QUEUE_MAX: '1',
    RATE_LIMIT_ENABLED: 'true',
    AUTH_RATE_LIMIT_PER_MINUTE: '100000',
    RATE_LIMIT_PER_MINUTE: '100000',
    LOGIN_MAX_FAILURES: '3',
  });
});
afterAll(() => t.close());

// Accounts made straight in the database, all with one hash (cost 12) of the same password, made once:
// what is measured is the queue of their logins, and registering each one through the API would run
// another cost-12 hash for every account before the burst.
const SEEDED_PASSWORD = 'queue-password-1';
let seededHash: Promise<string> | undefined;
async function seedUser(db = t.db): Promise<{ email: string; password: string }> {
  seededHash ??= hash(SEEDED_PASSWORD, 12);
  const email = uniqueEmail('queue');
  await db
    .insertInto('users')
    .values({ email, name: 'Queue', password_hash: await seededHash, role: 'user' })
    .execute();
  return { email, password: SEEDED_PASSWORD };
}

const BUSY_MESSAGE = 'Too many password checks in progress; try again shortly';

function expectBusy(res: Response): void {
  expectError(res, 503, 'SERVICE_UNAVAILABLE');
  expect(res.body.error.message).toBe(BUSY_MESSAGE);
  expect(res.headers['retry-after']).toMatch(/^[1-9]\d*$/);
}

const statuses = (responses: Response[]) => responses.map((res) => res.status).sort((a, b) => a - b);

describe('when more password hashes wait than PASSWORD_HASH_QUEUE_MAX', () => {
  it('refuses the excess logins at once with 503 and Retry-After, and serves the others', async () => {
    // Eight accounts, so that no account's lockout count (three attempts in flight) gets in the way.
    const users = [];
    for (let i = 0; i < 8; i++) users.push(await seedUser());
    const burst = await Promise.all(users.map((user) => t.post('/api/auth/login/json', { email: user.email, password: user.password })));
    // One hashing and one waiting are served; the six that arrive while both slots are taken are refused.
    expect(statuses(burst)).toEqual([200, 200, 503, 503, 503, 503, 503, 503]);
    for (const res of burst.filter((r) => r.status === 503)) expectBusy(res);
  });

  it('does not count a refused login as a failed attempt', async () => {
    const user = await seedUser();
    const burst = await Promise.all(
      Array.from({ length: 8 }, () => t.post('/api/auth/login/json', { email: user.email, password: 'wrong-password-1' })),
    );
    // Two are checked (one hashing, one waiting). The attempt is taken before the check, so the
    // others are refused by the lockout (429, its three points held) or by the full queue (503,
    // which gives its point back).
    const sorted = statuses(burst);
    expect(sorted.slice(0, 2)).toEqual([401, 401]);
    for (const status of sorted.slice(2)) expect([429, 503]).toContain(status);
    expect(sorted).toContain(503);
    // Two failures counted, under the lockout's three: refusals were not counted, so the password still works.
    const res = await t.post('/api/auth/login/json', { email: user.email, password: user.password });
    expect(res.status).toBe(200);
  });

  it('creates no account for a refused registration', async () => {
    const emails = Array.from({ length: 6 }, () => uniqueEmail('burst'));
    const burst = await Promise.all(
      emails.map((email) => t.post('/api/auth/register', { email, password: 'burst-password-1', name: 'Burst' })),
    );
    expect(statuses(burst)).toEqual([201, 201, 503, 503, 503, 503]);
    for (const [index, res] of burst.entries()) {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from users where email = ${emails[index]}`.execute(t.db);
      expect(rows[0].n).toBe(res.status === 201 ? 1 : 0);
      if (res.status === 503) expectBusy(res);
    }
  });

  it('serves every request of a burst that fits the bound', async () => {
    const user = await seedUser();
    const pair = await Promise.all(
      Array.from({ length: 2 }, () => t.post('/api/auth/login/json', { email: user.email, password: user.password })),
    );
    expect(statuses(pair)).toEqual([200, 200]);
  });

  it('keeps answering requests that need no hashing while hashes are refused', async () => {
    const user = await t.register();
    const users = [];
    for (let i = 0; i < 6; i++) users.push(await seedUser());
    const [logins, me] = await Promise.all([
      Promise.all(users.map((other) => t.post('/api/auth/login/json', { email: other.email, password: other.password }))),
      t.get('/api/auth/me', { token: user.access }),
    ]);
    expect(me.status).toBe(200);
    expect(me.body.data.email).toBe(user.email);
    expect(logins.filter((r) => r.status === 503).length).toBeGreaterThan(0);
  });
});

describe('PASSWORD_HASH_QUEUE_MAX=0', () => {
  let strict: TestContext;
  beforeAll(async () => {
    strict = await startTestApp({ BCRYPT_COST: '10', PASSWORD_HASH_CONCURRENCY: '2', PASSWORD_HASH_QUEUE_MAX: '0' });
  });
  afterAll(() => strict.close());

  it('runs as many hashes as there are slots and queues none', async () => {
    const user = await strict.register();
    const burst = await Promise.all(
      Array.from({ length: 5 }, () => strict.post('/api/auth/login/json', { email: user.email, password: user.password })),
    );
    expect(statuses(burst)).toEqual([200, 200, 503, 503, 503]);
  });
});

// ---------------------------------------------------------------------------------------------
// One caller cannot take the queue from everyone else. The app logs to a buffer, so the log lines
// of refusals can be read.

describe('one caller flooding the hash queue', () => {
  const FLOOD = 120;
  let base: TestContext;
  let app: App;
  let text = '';
  const logLines = () =>
    text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, any>);

  beforeAll(async () => {
    base = await startTestApp({
      BCRYPT_COST: '12',
      PASSWORD_HASH_CONCURRENCY: '1',
      PASSWORD_HASH_QUEUE_MAX: '4',
      PASSWORD_HASH_CALLER_MAX: '2',
      RATE_LIMIT_ENABLED: 'true',
      AUTH_RATE_LIMIT_PER_MINUTE: '100000',
      RATE_LIMIT_PER_MINUTE: '100000',
      LOGIN_MAX_FAILURES: '1000',
      LOGIN_ACCOUNT_MAX_FAILURES: '100000',
      TRUST_PROXY: 'true',
    });
    await base.stop();
    app = await createApp(base.config, { logger: createLogger({ level: 'info' }, { write: (chunk: string) => void (text += chunk) }) });
  });
  afterAll(async () => {
    await app?.close();
    await base?.close();
  });

  const post = async (path: string, body: object, ip: string, token?: string): Promise<Response> => {
    let req = request(app.koa.callback()).post(path).set('X-Forwarded-For', ip);
    if (token) req = req.set('Authorization', `Bearer ${token}`);
    const res = await req.send(body);
    assertMatchesContract('POST', path, res.status, res.headers, res.body);
    return { status: res.status, headers: res.headers, body: res.body };
  };
  const register = async (ip: string) => {
    const email = uniqueEmail('flood');
    const res = await post('/api/auth/register', { email, password: 'flood-password-1', name: 'Flood' }, ip);
    expect(res.status).toBe(201);
    return { email, password: 'flood-password-1', access: res.body.data.access_token as string };
  };

  it("120 parallel change-password calls from one user: other users' logins from other addresses are answered, never 503", async () => {
    const flooder = await register('198.51.100.1');
    const others = [await seedUser(app.db), await seedUser(app.db), await seedUser(app.db)];
    let refusedOnce: () => void = () => {};
    const refused = new Promise<void>((resolve) => (refusedOnce = resolve));
    const flood = Promise.all(
      Array.from({ length: FLOOD }, async () => {
        const res = await post(
          '/api/auth/change-password',
          { current_password: flooder.password, new_password: 'flood-password-2' },
          '198.51.100.1',
          flooder.access,
        );
        if (res.status !== 200) refusedOnce();
        return res;
      }),
    );
    // Once the flood is being refused, it holds every place it can: now the others sign in.
    await refused;
    const logins = await Promise.all(
      others.map((other, i) =>
        post(
          '/api/auth/login/json',
          { email: other.email, password: i === 0 ? 'not-the-password-9' : other.password },
          `203.0.113.${i + 1}`,
        ),
      ),
    );
    expect(logins.map((res) => res.status)).toEqual([401, 200, 200]);

    const answers = await flood;
    const counts = (status: number) => answers.filter((res) => res.status === status).length;
    expect(counts(200) + counts(429)).toBe(FLOOD);
    expect(counts(429)).toBeGreaterThan(FLOOD / 2);
    for (const res of answers.filter((r) => r.status === 429)) {
      expect(res.body).toEqual({
        success: false,
        error: {
          code: 'RATE_LIMITED',
          message:
            'Too many password operations at once from this caller: it holds its share of the password-hashing queue (PASSWORD_HASH_CALLER_MAX); try again shortly',
        },
      });
      expect(res.headers['retry-after']).toMatch(/^[1-9]\d*$/);
    }
  });

  it('a refusal for a full queue is a 503 logged at warn, without a stack trace', async () => {
    const user = await seedUser(app.db);
    // Many clients at once, each within its share: the queue itself fills.
    const burst = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        request(app.koa.callback())
          .post('/api/auth/login/json')
          .set('X-Forwarded-For', `192.0.2.${i + 1}`)
          .set('X-Request-Id', `full-queue-${i}`)
          .send({ email: user.email, password: user.password }),
      ),
    );
    const busy = burst.filter((res) => res.status === 503);
    expect(busy.length).toBeGreaterThan(0);
    for (const res of busy) expect(res.body).toEqual({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: BUSY_MESSAGE } });
    const refusals = logLines().filter((line) => String(line.requestId).startsWith('full-queue-') && line.msg === BUSY_MESSAGE);
    expect(refusals).toHaveLength(busy.length);
    for (const line of refusals) {
      expect(line).toEqual({
        level: 40,
        time: expect.any(Number),
        requestId: line.requestId,
        method: 'POST',
        path: '/api/auth/login/json',
        status: 503,
        code: 'SERVICE_UNAVAILABLE',
        msg: BUSY_MESSAGE,
      });
    }
    expect(text).not.toMatch(/"stack"/);
    expect(logLines().filter((line) => line.level >= 50)).toEqual([]);
  });
});
