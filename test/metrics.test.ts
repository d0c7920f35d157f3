import request from 'supertest';
import { ADMIN, startTestApp, type TestContext } from './support/app.js';
import { expectUnauthorized } from './support/expect.js';
import { freePort } from './support/net.js';

/** /metrics is outside the contract, so it is fetched directly rather than through the contract-checking helpers. */
function scrape(t: TestContext, token?: string) {
  const req = request(t.app.koa.callback()).get('/metrics');
  return token === undefined ? req : req.set('Authorization', `Bearer ${token}`);
}

/** The value of one sample, e.g. `auth_events_total{event_type="login.succeeded"}`; undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('GET /metrics', () => {
  let t: TestContext;
  beforeAll(async () => {
    // Mail to a port nothing listens on stays in the outbox, so the backlog has something to count.
    t = await startTestApp({ SMTP_URL: `smtp://127.0.0.1:${await freePort()}`, MAIL_RETRY_BASE_MS: '3600000' });
  });
  afterAll(() => t.close());

  it('answers the Prometheus text format with the process, request, event, hashing and outbox metrics', async () => {
    await t.get('/health/live');
    const res = await scrape(t);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(res.headers['cache-control']).toBe('no-store');
    for (const name of [
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
      'http_request_duration_seconds',
      'auth_events_total',
      'password_hash_duration_seconds',
      'password_hash_waiting',
      'mail_outbox_pending',
    ]) {
      expect(res.text).toContain(`# TYPE ${name} `);
    }
    expect(
      sample(res.text, 'http_request_duration_seconds_count{operation_id="healthLive",method="GET",status="200"}'),
    ).toBeGreaterThanOrEqual(1);
    // Every event type is there from the start, at 0 until it happens.
    expect(sample(res.text, 'auth_events_total{event_type="session.refresh_reuse_detected"}')).toBe(0);
    expect(sample(res.text, 'password_hash_waiting')).toBe(0);
  });

  it('counts logins, good and bad, and the time their password checks took', async () => {
    const before = (await scrape(t)).text;
    const user = await t.register();
    expect((await t.post('/api/auth/login/json', { email: user.email, password: user.password })).status).toBe(200);
    expect((await t.post('/api/auth/login/json', { email: user.email, password: 'not-the-password' })).status).toBe(401);
    const after = (await scrape(t)).text;

    const moved = (series: string) => (sample(after, series) ?? 0) - (sample(before, series) ?? 0);
    expect(moved('auth_events_total{event_type="login.succeeded"}')).toBe(1);
    expect(moved('auth_events_total{event_type="login.failed"}')).toBe(1);
    expect(moved('auth_events_total{event_type="user.registered"}')).toBe(1);
    // Registration hashes once, each login checks once.
    expect(moved('password_hash_duration_seconds_count')).toBe(3);
    expect(moved('http_request_duration_seconds_count{operation_id="loginJson",method="POST",status="401"}')).toBe(1);
  });

  it('labels requests outside the contract with a fixed operation, never their path', async () => {
    expect((await t.get('/no/such/route/unmatched-segment')).status).toBe(404);
    const text = (await scrape(t)).text;
    expect(sample(text, 'http_request_duration_seconds_count{operation_id="none",method="GET",status="404"}')).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain('unmatched-segment');
    // Scrapes do not time themselves: no other request of this suite is a GET outside the contract that succeeds.
    expect(
      sample((await scrape(t)).text, 'http_request_duration_seconds_count{operation_id="none",method="GET",status="200"}'),
    ).toBeUndefined();
  });

  it('reports the outbox backlog from the database at each scrape', async () => {
    await t.register(); // its verification mail cannot be delivered, so it waits
    const pending = await t.db
      .selectFrom('mail_outbox')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('sent_at', 'is', null)
      .where('failed_at', 'is', null)
      .executeTakeFirstOrThrow();
    expect(Number(pending.n)).toBeGreaterThanOrEqual(1);
    expect(sample((await scrape(t)).text, 'mail_outbox_pending')).toBe(Number(pending.n));
  });

  it('shows the PostgreSQL pool on PostgreSQL only', async () => {
    const text = (await scrape(t)).text;
    if (t.kind === 'postgres') {
      // The scrape's own outbox query may be taking or awaiting a connection: only the bounds are fixed.
      const total = sample(text, 'db_pool_connections')!;
      expect(total).toBeGreaterThanOrEqual(1);
      expect(total).toBeLessThanOrEqual(10);
      expect(sample(text, 'db_pool_idle_connections')).toBeLessThanOrEqual(total);
      expect(sample(text, 'db_pool_waiting_requests')).toBeGreaterThanOrEqual(0);
    } else {
      expect(text).not.toContain('db_pool_');
    }
  });

  it('takes GET and HEAD only', async () => {
    const res = await request(t.app.koa.callback()).post('/metrics');
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD');
    expect(res.body.error.code).toBe('METHOD_NOT_ALLOWED');
    expect((await request(t.app.koa.callback()).head('/metrics')).status).toBe(200);
  });
});

describe('METRICS_TOKEN', () => {
  const TOKEN = 'a-scrape-token-of-some-length-0123456789';
  let t: TestContext;
  beforeAll(async () => {
    t = await startTestApp({ METRICS_TOKEN: TOKEN });
  });
  afterAll(() => t.close());

  it('is required as a bearer token; a missing or wrong one is a 401 in the envelope', async () => {
    expectUnauthorized(await scrape(t));
    expectUnauthorized(await scrape(t, `${TOKEN}x`));
    expectUnauthorized(await scrape(t, TOKEN.slice(0, -1)));
    expectUnauthorized(await request(t.app.koa.callback()).get('/metrics').set('Authorization', `Basic ${TOKEN}`));
    // An access token of the API is no scrape token either.
    expectUnauthorized(await scrape(t, await t.adminToken()));

    const res = await scrape(t, TOKEN);
    expect(res.status).toBe(200);
    expect(res.text).toContain('# TYPE auth_events_total counter');
  });
});

describe('METRICS_ENABLED=false', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await startTestApp({ METRICS_ENABLED: 'false' });
  });
  afterAll(() => t.close());

  it('answers /metrics with 404 like any unknown route', async () => {
    const res = await scrape(t);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ success: false, error: { code: 'NOT_FOUND', message: expect.any(String) } });
  });

  it('leaves the API as it was', async () => {
    expect((await t.post('/api/auth/login/json', ADMIN)).status).toBe(200);
  });
});

describe('rate limits', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await startTestApp({ RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_PER_MINUTE: '2' });
  });
  afterAll(() => t.close());

  it('never apply to scrapes', async () => {
    for (let i = 0; i < 5; i++) expect((await scrape(t)).status).toBe(200);
    // The API from the same address is limited meanwhile.
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await t.get('/api/auth/me')).status);
    expect(statuses).toContain(429);
  });
});
