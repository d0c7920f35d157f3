import { Pool } from 'pg';
import { loadConfig } from '../src/config/index.js';
import { toApiError } from '../src/http/errors.js';
import { limiterFactory, StoreOutages } from '../src/infra/rate-limiter.js';
import { createLogger } from '../src/logger.js';
import { LoginGuard } from '../src/sessions/login-guard.js';
import { startTestApp, TEST_SECRET, uniqueEmail, type TestContext } from './support/app.js';
import { until } from './support/wait.js';

// A lockout window of 0.6 seconds passing, as the clock runs: with the timing tests, alone, so that
// no other test's load stretches one step of it past the window.

/** Runs a lockout of 0.6 seconds (the settings take whole minutes) through the memory or the PostgreSQL store. */
async function lockoutWindowPasses(pool?: Pool): Promise<void> {
  const base = loadConfig({ SECRET_KEY: TEST_SECRET, LOG_LEVEL: 'silent', LOGIN_MAX_FAILURES: '2' });
  const limits = pool ? { ...base.limits, store: 'postgres' as const } : base.limits;
  const guard = await LoginGuard.create(
    { ...limits, loginLockoutMinutes: 0.01 },
    base.secret.key,
    limiterFactory(limits, pool && { pool, preparedStatements: true, outages: new StoreOutages(createLogger({ level: 'silent' })) }),
  );
  const email = uniqueEmail('window');
  const ip = '192.0.2.9';
  expect(await (await guard.begin(email, ip)).failed()).toBeUndefined();
  expect(await (await guard.begin(email, ip)).failed()).toBe('client');
  const locked = await guard.begin(email, ip).catch((error: unknown) => error);
  // As the client gets it.
  expect(toApiError(locked)).toMatchObject({ status: 429, code: 'RATE_LIMITED', headers: { 'Retry-After': '1' } });
  // Asking while locked changes nothing (points over the limit are given back), so ask until the lock lifts.
  const lifted = await until(() => guard.begin(` ${email.toUpperCase()} `, ip).catch(() => undefined), 'the lock to lift', 5_000);
  await lifted.abandoned();
  // One failure, a completed sign-in, one failure: never two in a row, never locked.
  await (await guard.begin(email, ip)).failed();
  await (await guard.begin(email, ip)).succeeded();
  await guard.signInCompleted(email, ip);
  expect(await (await guard.begin(email, ip)).failed()).toBeUndefined();
  // A right password whose sign-in goes on to a second factor clears nothing: the next failure locks.
  await (await guard.begin(email, ip)).succeeded();
  expect(await (await guard.begin(email, ip)).failed()).toBe('client');
}

describe('the lockout window', () => {
  test('a lock lifts when the window passes, and a completed sign-in clears the count (memory store)', () => lockoutWindowPasses());

  const onPostgres = process.env.TEST_DATABASE_KIND === 'postgres';
  (onPostgres ? describe : describe.skip)('RATE_LIMIT_STORE=postgres', () => {
    let t: TestContext;
    beforeAll(async () => {
      t = await startTestApp({ RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_STORE: 'postgres' });
    });
    afterAll(() => t?.close());

    test('a lock lifts when the window passes (PostgreSQL store)', async () => {
      const pool = new Pool({ connectionString: t.config.database.url, max: 2 });
      try {
        await lockoutWindowPasses(pool);
      } finally {
        await pool.end();
      }
    });
  });
});
