import type { Response } from './support/app.js';
import { appOnPrivateCluster, describeOutage, skipReason } from './support/pg-cluster.js';
import { until } from './support/wait.js';

/*
 * How quickly clients hear that the PostgreSQL server went away: the same outages as
 * database-outage.test.ts, with the answers timed. The answers themselves are checked there.
 */

/** Generous wall-clock budgets for a loaded CI machine; the contract's numbers are tighter. */
const READY_BUDGET_MS = 2000;
const REQUEST_BUDGET_MS = 4000;
const RECOVERY_BUDGET_MS = 10_000;

/** Sends a request and measures how long the answer took. */
async function timed(send: () => Promise<Response>): Promise<{ res: Response; ms: number }> {
  const started = Date.now();
  const res = await send();
  return { res, ms: Date.now() - started };
}

function expectQuick503(measured: { res: Response; ms: number }, budget = REQUEST_BUDGET_MS): void {
  expect(measured.res.status).toBe(503);
  expect(measured.ms).toBeLessThan(budget);
}

describeOutage(`answers quickly while the PostgreSQL server is away${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  const outage = appOnPrivateCluster();
  const { app, login } = outage;
  const recovered = async () => {
    await until(async () => (await app().get('/health/ready')).status === 200, 'the service to recover', RECOVERY_BUDGET_MS, 200);
    await until(async () => (await login()).status === 200, 'login to work again', RECOVERY_BUDGET_MS, 200);
  };

  it('answers within budget once the server stops (immediate shutdown)', async () => {
    await outage.cluster.stop('immediate');

    expectQuick503(await timed(() => app().get('/health/ready')), READY_BUDGET_MS);
    const live = await timed(() => app().get('/health/live'));
    expect(live.res.status).toBe(200);
    expect(live.ms).toBeLessThan(1000);

    expectQuick503(await timed(login));
    expectQuick503(await timed(() => app().get('/api/auth/me', { token: outage.user.access })));
    expectQuick503(await timed(() => app().post('/api/auth/refresh', { refresh_token: outage.user.refresh })));
    expectQuick503(
      await timed(() =>
        app().post('/api/auth/register', { email: 'new-during-timed-outage@example.com', password: 'password-123', name: 'Outage' }),
      ),
    );
    expectQuick503(
      await timed(() => app().post('/api/auth/login', { username: outage.user.email, password: outage.user.password }, { form: true })),
    );
    const forgot = await timed(() => app().post('/api/auth/forgot-password', { email: outage.user.email }));
    expect(forgot.res.status).toBe(200);
    expect(forgot.ms).toBeLessThan(REQUEST_BUDGET_MS);

    const started = Date.now();
    const burst = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        i % 3 === 0 ? app().get('/health/ready') : i % 3 === 1 ? login() : app().get('/api/auth/me', { token: outage.user.access }),
      ),
    );
    expect(Date.now() - started).toBeLessThan(REQUEST_BUDGET_MS * 2);
    for (const res of burst) expect(res.status).toBe(503);

    await outage.cluster.start();
    await recovered();
  }, 60_000);

  it('answers every request racing a fast shutdown within budget', async () => {
    const adminAccess = await app().adminToken();
    const durations: number[] = [];
    const statuses: number[] = [];
    let stop = false;
    const worker = async (i: number) => {
      while (!stop) {
        const started = Date.now();
        const res =
          i % 4 === 0
            ? await app().get('/api/auth/me', { token: outage.user.access })
            : i % 4 === 1
              ? await app().get('/api/users?per_page=5', { token: adminAccess })
              : i % 4 === 2
                ? await app().get('/health/ready')
                : await app().post('/api/auth/register', {
                    email: `timed-race-${i}-${statuses.length}-${Date.now()}@example.com`,
                    password: 'password-123',
                    name: 'Race',
                  });
        durations.push(Date.now() - started);
        statuses.push(res.status);
      }
    };

    const workers = Array.from({ length: 8 }, (_, i) => worker(i));
    await until(() => statuses.length >= 8, 'the first answers', RECOVERY_BUDGET_MS);
    await outage.cluster.stop('fast');
    const answeredBeforeStop = statuses.length;
    await until(() => statuses.length >= answeredBeforeStop + 8 && statuses.includes(503), 'answers during the outage', RECOVERY_BUDGET_MS);
    stop = true;
    await Promise.all(workers);

    for (const ms of durations) expect(ms).toBeLessThan(REQUEST_BUDGET_MS + 1000);
    expectQuick503(await timed(() => app().get('/health/ready')), READY_BUDGET_MS);
    expectQuick503(await timed(login));

    await outage.cluster.start();
    await recovered();
  }, 60_000);
});
