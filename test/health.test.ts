import { sql } from 'kysely';
import { startTestApp, type TestContext } from './support/app.js';

let t: TestContext;
beforeAll(async () => {
  t = await startTestApp({ APP_VERSION: '2.3.4' });
});
afterAll(() => t.close());

describe('health', () => {
  it('GET /health/ reports ok, the configured version and the uptime', async () => {
    const res = await t.get('/health/');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { status: 'ok', version: '2.3.4', uptime_seconds: expect.any(Number) } });
  });

  it('GET /health answers like /health/', async () => {
    const res = await t.get('/health');
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe('ok');
  });

  it('GET /health/live says alive', async () => {
    const res = await t.get('/health/live');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { status: 'alive' } });
  });

  it('GET /health/ready checks the database', async () => {
    const res = await t.get('/health/ready');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { status: 'ready', checks: { database: 'ok' } } });
    const { rows } = await sql<{ one: number }>`select 1 as one`.execute(t.db);
    expect(rows[0].one).toBe(1);
  });

  it('health probes need no token and ignore a bad one', async () => {
    const res = await t.get('/health/live', { token: 'not-a-token' });
    expect(res.status).toBe(200);
  });
});
