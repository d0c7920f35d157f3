import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { WebhookDeliveryTable, WebhookEndpointTable, WebhookMessageTable } from '../src/webhooks/webhook-repository.js';
import { startTestApp, type TestContext } from './support/app.js';
import { auditTable } from './support/audit.js';
import { expectError, expectUnauthorized } from './support/expect.js';
import { until } from './support/wait.js';

// GET /api/admin/overview: the counts the console's first screen shows, each of which moves when
// what it counts does.

let t: TestContext;
let admin: string;

beforeAll(async () => {
  t = await startTestApp({ APP_VERSION: '9.8.7', MAIL_POLL_INTERVAL_MS: '50' });
  admin = await t.adminToken();
});
afterAll(() => t?.close());

type Overview = {
  generated_at: string;
  users: { total: number; active: number; disabled: number; deleted: number };
  sign_ins: { since: string; succeeded: number; failed: number };
  health: { status: string; version: string; uptime_seconds: number };
  mail: { pending: number; failed: number; oldest_pending_at: string | null };
  webhooks: { pending: number; failed: number; oldest_pending_at: string | null };
};

async function overview(token = admin): Promise<Overview> {
  const res = await t.get('/api/admin/overview', { token });
  expect(res.status).toBe(200);
  return res.body.data as Overview;
}

const hooks = () =>
  t.db.withTables<{
    webhook_endpoints: WebhookEndpointTable;
    webhook_messages: WebhookMessageTable;
    webhook_deliveries: WebhookDeliveryTable;
  }>();

const HOUR = 60 * 60 * 1000;
const hoursAgo = (hours: number) => new Date(Date.now() - hours * HOUR);

describe('GET /api/admin/overview', () => {
  it('counts the users by state, and the counts follow registration, disabling and deletion', async () => {
    const before = await overview();
    const live = await t.db
      .selectFrom('users')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('deleted_at', 'is', null)
      .executeTakeFirstOrThrow();
    expect(before.users.total).toBe(live.n);
    expect(before.users.total).toBe(before.users.active + before.users.disabled);

    const user = await t.register();
    const registered = await overview();
    expect(registered.users).toEqual({ ...before.users, total: before.users.total + 1, active: before.users.active + 1 });

    expect((await t.put(`/api/users/${user.id}`, { is_active: false }, { token: admin })).status).toBe(200);
    expect((await overview()).users).toEqual({ ...before.users, total: before.users.total + 1, disabled: before.users.disabled + 1 });

    expect((await t.delete(`/api/users/${user.id}`, { token: admin })).status).toBe(204);
    expect((await overview()).users).toEqual({ ...before.users, deleted: before.users.deleted + 1 });
  });

  it('counts the sign-ins and failed sign-ins of the last 24 hours', async () => {
    const user = await t.register();
    const before = await overview();
    expect(Date.parse(before.generated_at) - Date.parse(before.sign_ins.since)).toBe(24 * HOUR);

    expect((await t.post('/api/auth/login/json', { email: user.email, password: user.password })).status).toBe(200);
    expect((await t.post('/api/auth/login/json', { email: user.email, password: 'not-the-password' })).status).toBe(401);
    expect((await t.post('/api/auth/login/json', { email: 'nobody-here@example.com', password: 'not-the-password' })).status).toBe(401);
    // A failure older than the window is not counted.
    await auditTable(t)
      .insertInto('audit_events')
      .values({
        event_type: 'login.failed',
        occurred_at: hoursAgo(25),
        actor_user_id: null,
        subject_user_id: user.id,
        ip: null,
        user_agent: null,
        request_id: null,
        details: JSON.stringify({ reason: 'invalid_credentials' }),
      })
      .execute();

    const after = await overview();
    expect(after.sign_ins.succeeded).toBe(before.sign_ins.succeeded + 1);
    expect(after.sign_ins.failed).toBe(before.sign_ins.failed + 2);
  });

  it('shows what the mail outbox and webhook deliveries hold back, and what they gave up today', async () => {
    // Mail: one waiting (its retry not yet due, so the outbox leaves it), one given up now, one given
    // up two days ago, one sent.
    const queued = hoursAgo(2);
    await t.db
      .insertInto('mail_outbox')
      .values([
        { recipient: 'a@example.com', subject: 'Waiting', payload: 'x', created_at: queued, next_attempt_at: new Date(Date.now() + HOUR) },
        { recipient: 'b@example.com', subject: 'Given up', payload: null, failed_at: new Date(), last_error: 'refused' },
        { recipient: 'c@example.com', subject: 'Given up long ago', payload: null, failed_at: hoursAgo(48), last_error: 'refused' },
        { recipient: 'd@example.com', subject: 'Sent', payload: null, sent_at: new Date() },
      ])
      .execute();
    // Webhooks: an endpoint that is switched off (the worker leaves its deliveries), with a delivery
    // waiting, one given up now, one given up two days ago and one delivered.
    const endpoint = await hooks()
      .insertInto('webhook_endpoints')
      .values({ url: 'https://hooks.example.com/in', events: ['*'], enabled: false, secret_sealed: 'sealed' })
      .returning('id')
      .executeTakeFirstOrThrow();
    const message = randomUUID();
    await hooks().insertInto('webhook_messages').values({ id: message, event_type: 'user.created', body: '{}' }).execute();
    const delivery = { message_id: message, endpoint_id: endpoint.id };
    await hooks()
      .insertInto('webhook_deliveries')
      .values([
        { ...delivery, status: 'pending', created_at: queued },
        { ...delivery, status: 'failed', finished_at: new Date() },
        { ...delivery, status: 'failed', finished_at: hoursAgo(48) },
        { ...delivery, status: 'delivered', delivered_at: new Date(), finished_at: new Date() },
      ])
      .execute();

    // Mail of the earlier tests may still be on its way out: the count settles on the one held back.
    const settled = await until(async () => {
      const now = await overview();
      return now.mail.pending === 1 && now;
    }, 'the outbox to send what is due');
    expect(settled.mail).toEqual({ pending: 1, failed: 1, oldest_pending_at: queued.toISOString() });
    expect(settled.webhooks).toEqual({ pending: 1, failed: 1, oldest_pending_at: queued.toISOString() });

    // Gone with their endpoint, the deliveries leave the backlog.
    await hooks().deleteFrom('webhook_endpoints').where('id', '=', endpoint.id).execute();
    expect((await overview()).webhooks).toEqual({ pending: 0, failed: 0, oldest_pending_at: null });
  });

  it('reports this process: its version, how long it has run', async () => {
    const { health } = await overview();
    expect(health).toEqual({ status: 'ok', version: '9.8.7', uptime_seconds: expect.any(Number) });
    expect(health.uptime_seconds).toBeGreaterThanOrEqual(0);
  });

  it("answers an admin's API keys, read-only ones too, and refuses everyone else", async () => {
    for (const read_only of [false, true]) {
      const key = await t.post('/api/auth/api-keys', { name: `Monitoring ${read_only}`, read_only }, { token: admin });
      expect(key.status).toBe(201);
      expect((await overview(key.body.data.key)).users.total).toBeGreaterThan(0);
    }
    const user = await t.register();
    expectError(await t.get('/api/admin/overview', { token: user.access }), 403, 'FORBIDDEN');
    const userKey = await t.post('/api/auth/api-keys', { name: 'Mine' }, { token: user.access });
    expect(userKey.status).toBe(201);
    expectError(await t.get('/api/admin/overview', { token: userKey.body.data.key }), 403, 'FORBIDDEN');
    expectUnauthorized(await t.get('/api/admin/overview'));
  });

  it('says when the process has begun to stop', async () => {
    t.app.beginShutdown();
    expect((await overview()).health.status).toBe('draining');
  });
});
