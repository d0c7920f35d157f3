import { sql } from 'kysely';
import request from 'supertest';
import { startTestApp, type TestContext } from './support/app.js';

describe('bodies over the limit', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('answers 413 PAYLOAD_TOO_LARGE for a JSON body over 64 KiB and creates nothing', async () => {
    const name = 'x'.repeat(70 * 1024);
    const res = await t.post('/api/auth/register', { email: 'big@example.com', password: 'password-123', name });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ success: false, error: { code: 'PAYLOAD_TOO_LARGE', message: 'Request body too large' } });
    expect(await t.db.selectFrom('users').where('email', '=', 'big@example.com').selectAll().execute()).toEqual([]);
  });

  it('answers 413 for a form body over the limit too', async () => {
    const res = await t.post('/api/auth/login', { username: 'a@example.com', password: 'p'.repeat(70 * 1024) }, { form: true });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('answers OPTIONS on a known path with 204 and the allowed methods', async () => {
    const res = await request(t.app.koa.callback()).options('/api/users/1');
    expect(res.status).toBe(204);
    expect(res.headers.allow.split(', ').sort()).toEqual(['DELETE', 'GET', 'HEAD', 'PUT']);
  });

  it('answers HEAD on a GET operation without a body', async () => {
    const res = await request(t.app.koa.callback()).head('/health/live');
    expect(res.status).toBe(200);
    expect(res.text ?? '').toBe('');
  });
});

describe('unexpected failures', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('answers 500 INTERNAL_ERROR and says nothing about the cause', async () => {
    const user = await t.register();
    await sql`alter table sessions rename to sessions_gone`.execute(t.db);
    try {
      const res = await t.post('/api/auth/login/json', { email: user.email, password: user.password });
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ success: false, error: { code: 'INTERNAL_ERROR', message: 'Internal server error' } });
      expect(JSON.stringify(res.headers)).not.toMatch(/sessions/);
    } finally {
      await sql`alter table sessions_gone rename to sessions`.execute(t.db);
    }
    const again = await t.post('/api/auth/login/json', { email: user.email, password: user.password });
    expect(again.status).toBe(200);
  });
});

describe('database gone', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close().catch(() => {}));

  it('readiness answers 503 and liveness stays 200 once the database is closed', async () => {
    const user = await t.register();
    await t.db.destroy();

    const ready = await t.get('/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.body).toEqual({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: 'Service unavailable' } });

    const live = await t.get('/health/live');
    expect(live.status).toBe(200);

    const me = await t.get('/api/auth/me', { token: user.access });
    expect(me.status).toBe(503);
    expect(me.body.error.code).toBe('SERVICE_UNAVAILABLE');
  });
});
