import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { Client } from 'pg';
import { ConfigError, loadConfig, type HousekeepingConfig } from '../src/config/index.js';
import { HOUSEKEEPING_LOCK_KEY, purgeBatch } from '../src/db/housekeeping.js';
import { createLogger } from '../src/logger.js';
import { Housekeeping } from '../src/infra/housekeeping.js';
import { startTestApp, type RegisteredUser, type TestContext } from './support/app.js';
import { until } from './support/wait.js';

const HOUR_MS = 3600 * 1000;
const hoursAgo = (hours: number) => new Date(Date.now() - hours * HOUR_MS);
const inHours = (hours: number) => new Date(Date.now() + hours * HOUR_MS);
const quiet = createLogger({ level: 'silent' });

let t: TestContext;
let user: RegisteredUser;
let userId: number;

beforeAll(async () => {
  // The app's own worker stays off; each test runs its passes itself.
  t = await startTestApp({ HOUSEKEEPING_INTERVAL_SECONDS: '0' });
  user = await t.register();
  userId = user.id;
});
afterAll(() => t.close());

const withConfig = (overrides: Partial<HousekeepingConfig>): HousekeepingConfig => ({ ...t.config.housekeeping, ...overrides });

// Fixture rows carry a label (a session's user agent, a token's hash, a message's subject), so a test
// can tell its rows from those registration wrote.

async function addSession(ctx: TestContext, user: number, label: string, times: { expires: Date; revoked?: Date }): Promise<void> {
  await ctx.db
    .insertInto('sessions')
    .values({
      id: randomUUID(),
      user_id: user,
      refresh_token_hash: randomUUID(),
      user_agent: label,
      expires_at: times.expires,
      revoked_at: times.revoked ?? null,
    })
    .execute();
}

async function addToken(label: string, times: { expires: Date; used?: Date }): Promise<void> {
  await t.db
    .insertInto('account_tokens')
    .values({
      user_id: userId,
      purpose: 'password_reset',
      token_hash: label,
      email: 'fixture@example.com',
      expires_at: times.expires,
      used_at: times.used ?? null,
    })
    .execute();
}

async function addMail(label: string, times: { created: Date; sent?: Date; failed?: Date }): Promise<void> {
  await t.db
    .insertInto('mail_outbox')
    .values({
      recipient: 'fixture@example.com',
      subject: label,
      payload: times.sent || times.failed ? null : 'sealed',
      created_at: times.created,
      // Far ahead, so the app's mail loop leaves a pending fixture alone.
      next_attempt_at: inHours(24 * 365),
      sent_at: times.sent ?? null,
      failed_at: times.failed ?? null,
    })
    .execute();
}

async function sessionLabels(prefix: string): Promise<string[]> {
  const rows = await t.db
    .selectFrom('sessions')
    .select('user_agent')
    .where('user_agent', 'like', `${prefix}%`)
    .orderBy('user_agent')
    .execute();
  return rows.map((row) => row.user_agent ?? '');
}

async function tokenLabels(prefix: string): Promise<string[]> {
  const rows = await t.db
    .selectFrom('account_tokens')
    .select('token_hash')
    .where('token_hash', 'like', `${prefix}%`)
    .orderBy('token_hash')
    .execute();
  return rows.map((row) => row.token_hash);
}

async function mailLabels(prefix: string): Promise<string[]> {
  const rows = await t.db.selectFrom('mail_outbox').select('subject').where('subject', 'like', `${prefix}%`).orderBy('subject').execute();
  return rows.map((row) => row.subject);
}

describe('a purge', () => {
  it('removes the rows past the retention and nothing else', async () => {
    await addSession(t, userId, 'a:live', { expires: inHours(24) });
    await addSession(t, userId, 'a:revoked-recently', { expires: inHours(24), revoked: hoursAgo(1) });
    await addSession(t, userId, 'a:revoked-long-ago', { expires: inHours(24), revoked: hoursAgo(25) });
    await addSession(t, userId, 'a:expired-recently', { expires: hoursAgo(1) });
    await addSession(t, userId, 'a:expired-long-ago', { expires: hoursAgo(25) });
    await addToken('a:unused', { expires: inHours(1) });
    await addToken('a:used-recently', { expires: inHours(1), used: hoursAgo(1) });
    await addToken('a:used-long-ago', { expires: inHours(1), used: hoursAgo(25) });
    await addToken('a:expired-recently', { expires: hoursAgo(1) });
    await addToken('a:expired-long-ago', { expires: hoursAgo(25) });
    await addMail('a:pending', { created: hoursAgo(48) });
    await addMail('a:sent-recently', { created: hoursAgo(2), sent: hoursAgo(1) });
    await addMail('a:sent-long-ago', { created: hoursAgo(26), sent: hoursAgo(25) });
    await addMail('a:failed-recently', { created: hoursAgo(2), failed: hoursAgo(1) });
    await addMail('a:failed-long-ago', { created: hoursAgo(26), failed: hoursAgo(25) });
    const sessionsBefore = await t.db.selectFrom('sessions').select('id').where('user_agent', 'not like', 'a:%').execute();

    // A longer retention keeps all of them.
    const kept = await new Housekeeping(t.db, withConfig({ retentionHours: 48 }), t.config.audit, quiet).purge();
    expect(kept).toEqual({ removed: { sessions: 0, account_tokens: 0, email_codes: 0, mail_outbox: 0 }, status: 'done' });

    const result = await new Housekeeping(t.db, withConfig({ retentionHours: 24 }), t.config.audit, quiet).purge();
    expect(result).toEqual({ removed: { sessions: 2, account_tokens: 2, email_codes: 0, mail_outbox: 2 }, status: 'done' });
    expect(await sessionLabels('a:')).toEqual(['a:expired-recently', 'a:live', 'a:revoked-recently']);
    expect(await tokenLabels('a:')).toEqual(['a:expired-recently', 'a:unused', 'a:used-recently']);
    expect(await mailLabels('a:')).toEqual(['a:failed-recently', 'a:pending', 'a:sent-recently']);
    // The registered user's own session is untouched.
    expect(await t.db.selectFrom('sessions').select('id').where('user_agent', 'not like', 'a:%').execute()).toEqual(sessionsBefore);

    // Nothing is left to purge.
    expect((await new Housekeeping(t.db, t.config.housekeeping, t.config.audit, quiet).purge()).removed).toEqual({
      sessions: 0,
      account_tokens: 0,
      email_codes: 0,
      mail_outbox: 0,
    });
  });

  it('deletes at most a batch per statement, and every batch in a pass', async () => {
    for (let i = 0; i < 5; i++) await addSession(t, userId, `b:${i}`, { expires: hoursAgo(30) });

    expect(await purgeBatch(t.db, 'sessions', 24, 2)).toBe(2);
    expect(await sessionLabels('b:')).toHaveLength(3);

    const result = await new Housekeeping(t.db, withConfig({ batchSize: 2 }), t.config.audit, quiet).purge();
    expect(result).toEqual({ removed: { sessions: 3, account_tokens: 0, email_codes: 0, mail_outbox: 0 }, status: 'done' });
    expect(await sessionLabels('b:')).toEqual([]);
  });

  it('leaves the sessions users still sign in with, whatever the retention', async () => {
    const res = await t.post('/api/auth/login/json', { email: user.email, password: user.password });
    expect(res.status).toBe(200);
    await new Housekeeping(t.db, withConfig({ retentionHours: 1 }), t.config.audit, quiet).purge();
    expect((await t.get('/api/auth/me', { token: res.body.data.access_token })).status).toBe(200);
    expect((await t.post('/api/auth/refresh', { refresh_token: res.body.data.refresh_token })).status).toBe(200);
  });

  // With PGlite every query of the process shares one session, so only PostgreSQL can show another
  // connection holding the lock.
  const onPostgres = process.env.TEST_DATABASE_KIND === 'postgres';
  (onPostgres ? it : it.skip)('does nothing while another process holds the housekeeping lock', async () => {
    await addSession(t, userId, 'c:expired', { expires: hoursAgo(30) });
    const other = new Client({ connectionString: t.database.env.DATABASE_URL });
    await other.connect();
    try {
      await other.query('begin');
      await other.query('select pg_advisory_xact_lock($1::bigint)', [HOUSEKEEPING_LOCK_KEY]);

      const blocked = await new Housekeeping(t.db, t.config.housekeeping, t.config.audit, quiet).purge();
      expect(blocked).toEqual({ removed: { sessions: 0, account_tokens: 0, email_codes: 0, mail_outbox: 0 }, status: 'busy' });
      expect(await sessionLabels('c:')).toEqual(['c:expired']);

      await other.query('commit');
      const after = await new Housekeeping(t.db, t.config.housekeeping, t.config.audit, quiet).purge();
      expect(after).toEqual({ removed: { sessions: 1, account_tokens: 0, email_codes: 0, mail_outbox: 0 }, status: 'done' });
      expect(await sessionLabels('c:')).toEqual([]);
    } finally {
      await other.end();
    }
  });
});

/** Waits for a condition the code under test brings about on its own schedule. */
const eventually = (check: () => Promise<boolean>, timeoutMs = 30_000) => until(check, 'the purge', timeoutMs, 100);

describe('the worker', () => {
  it('purges on its schedule and logs what it removed', async () => {
    await addSession(t, userId, 'd:expired', { expires: hoursAgo(30) });
    await addMail('d:sent', { created: hoursAgo(30), sent: hoursAgo(30) });
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    });
    const worker = new Housekeeping(t.db, withConfig({ intervalSeconds: 1 }), t.config.audit, createLogger({ level: 'info' }, sink));
    worker.start();
    try {
      await eventually(async () => (await sessionLabels('d:')).length === 0 && (await mailLabels('d:')).length === 0);
    } finally {
      await worker.stop();
    }
    const purged = lines.filter((line) => String(line.msg).startsWith('housekeeping: purged'));
    expect(purged.length).toBeGreaterThanOrEqual(1);
    const removed = purged.map((line) => line.removed as Record<string, number>);
    expect(removed.reduce((sum, r) => sum + r.sessions, 0)).toBe(1);
    expect(removed.reduce((sum, r) => sum + r.mail_outbox, 0)).toBe(1);
  });

  it('runs inside the app when HOUSEKEEPING_INTERVAL_SECONDS is set, and stops with it', async () => {
    const other = await startTestApp({ HOUSEKEEPING_INTERVAL_SECONDS: '1' });
    try {
      const user = await other.register();
      await addSession(other, user.id, 'e:expired', { expires: hoursAgo(30) });
      await eventually(
        async () => (await other.db.selectFrom('sessions').select('id').where('user_agent', '=', 'e:expired').execute()).length === 0,
      );
    } finally {
      await other.close();
    }
  });
});

describe('configuration', () => {
  const base = { SECRET_KEY: 'x'.repeat(32) };

  it('defaults to an hourly pass of 1000-row batches, keeping rows a day', () => {
    const config = loadConfig(base);
    expect(config.housekeeping).toEqual({ intervalSeconds: 3600, batchSize: 1000, retentionHours: 24 });
    expect(loadConfig({ ...base, HOUSEKEEPING_INTERVAL_SECONDS: '0' }).housekeeping.intervalSeconds).toBe(0);
  });

  it.each([
    ['HOUSEKEEPING_INTERVAL_SECONDS', '-1'],
    ['HOUSEKEEPING_INTERVAL_SECONDS', 'hourly'],
    ['HOUSEKEEPING_BATCH_SIZE', '0'],
    ['HOUSEKEEPING_RETENTION_HOURS', '0'],
  ])('refuses %s=%s', (name, value) => {
    expect(() => loadConfig({ ...base, [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, [name]: value })).toThrow(name);
  });
});
