import { sql } from 'kysely';
import { startTestApp, uniqueEmail, type Response, type TestContext } from './support/app';
import { expectError } from './support/expect';

// One hash at a time and room for one more waiting: a burst of parallel password operations is
// partly refused at once instead of queueing. Cost 10 makes each hash long enough to overlap. The
// login lockout is on (three failures), with per-IP limits out of the way.
let t: TestContext;
beforeAll(async () => {
  t = await startTestApp({
    BCRYPT_COST: '10',
    PASSWORD_HASH_CONCURRENCY: '1',
    PASSWORD_HASH_QUEUE_MAX: '1',
    RATE_LIMIT_ENABLED: 'true',
    AUTH_RATE_LIMIT_PER_MINUTE: '100000',
    RATE_LIMIT_PER_MINUTE: '100000',
    LOGIN_MAX_FAILURES: '3',
  });
});
afterAll(() => t.close());

const BUSY_MESSAGE = 'Too many password checks in progress; try again shortly';

function expectBusy(res: Response): void {
  expectError(res, 503, 'SERVICE_UNAVAILABLE');
  expect(res.body.error.message).toBe(BUSY_MESSAGE);
  expect(res.headers['retry-after']).toMatch(/^[1-9]\d*$/);
}

const statuses = (responses: Response[]) => responses.map((res) => res.status).sort((a, b) => a - b);

describe('when more password hashes wait than PASSWORD_HASH_QUEUE_MAX', () => {
  it('refuses the excess logins at once with 503 and Retry-After, and serves the others', async () => {
    const user = await t.register();
    const burst = await Promise.all(
      Array.from({ length: 8 }, () => t.post('/api/auth/login/json', { email: user.email, password: user.password })),
    );
    // One hashing and one waiting are served; the six that arrive while both slots are taken are refused.
    expect(statuses(burst)).toEqual([200, 200, 503, 503, 503, 503, 503, 503]);
    for (const res of burst.filter((r) => r.status === 503)) expectBusy(res);
  });

  it('does not count a refused login as a failed attempt', async () => {
    const user = await t.register();
    const burst = await Promise.all(
      Array.from({ length: 8 }, () => t.post('/api/auth/login/json', { email: user.email, password: 'wrong-password-1' })),
    );
    expect(statuses(burst)).toEqual([401, 401, 503, 503, 503, 503, 503, 503]);
    // Two failures counted, under the lockout's three: refusals were not counted, so the password still works.
    const res = await t.post('/api/auth/login/json', { email: user.email, password: user.password });
    expect(res.status).toBe(200);
  });

  it('creates no account for a refused registration', async () => {
    const emails = Array.from({ length: 6 }, () => uniqueEmail('burst'));
    const burst = await Promise.all(emails.map((email) => t.post('/api/auth/register', { email, password: 'burst-password-1', name: 'Burst' })));
    expect(statuses(burst)).toEqual([201, 201, 503, 503, 503, 503]);
    for (const [index, res] of burst.entries()) {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from users where email = ${emails[index]}`.execute(t.db);
      expect(rows[0].n).toBe(res.status === 201 ? 1 : 0);
      if (res.status === 503) expectBusy(res);
    }
  });

  it('serves every request of a burst that fits the bound', async () => {
    const user = await t.register();
    const pair = await Promise.all(
      Array.from({ length: 2 }, () => t.post('/api/auth/login/json', { email: user.email, password: user.password })),
    );
    expect(statuses(pair)).toEqual([200, 200]);
  });

  it('keeps answering requests that need no hashing while hashes are refused', async () => {
    const user = await t.register();
    const [logins, me] = await Promise.all([
      Promise.all(Array.from({ length: 6 }, () => t.post('/api/auth/login/json', { email: user.email, password: user.password }))),
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
