import type { Response } from './support/app.js';
import { appOnPrivateCluster, describeOutage, skipReason } from './support/pg-cluster.js';
import { until } from './support/wait.js';

/*
 * A real PostgreSQL server that goes away under a running service and comes back. The suite makes
 * a private cluster, points the service at it, stops and restarts it, and checks what clients see
 * meanwhile. How quickly they see it is checked in database-outage.timing.test.ts.
 */

/** How long a recovery may take on a loaded CI machine before the test gives up waiting. */
const RECOVERY_BUDGET_MS = 10_000;

const UNAVAILABLE = { success: false, error: { code: 'SERVICE_UNAVAILABLE', message: 'Service unavailable' } };

function expectUnavailable(res: Response): void {
  expect({ status: res.status, body: res.body }).toEqual({ status: 503, body: UNAVAILABLE });
  expect(res.headers['content-type']).toMatch(/^application\/json/);
}

/** Polls until `probe` is true; fails if the service has not recovered within RECOVERY_BUDGET_MS. */
const waitFor = (probe: () => Promise<boolean>, budgetMs: number) => until(probe, 'the service to recover', budgetMs, 200);

describeOutage(`the PostgreSQL server goes away and comes back${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  const outage = appOnPrivateCluster();
  const { app, login } = outage;

  it('is ready and serves requests while the server runs', async () => {
    const ready = await app().get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ success: true, data: { status: 'ready', checks: { database: 'ok' } } });
    expect((await app().get('/api/auth/me', { token: outage.user.access })).status).toBe(200);
    expect(app().config.database.url).toBe(outage.cluster.url);
  });

  it('answers 503 SERVICE_UNAVAILABLE once the server stops (immediate shutdown), and stays alive', async () => {
    await outage.cluster.stop('immediate');

    expectUnavailable(await app().get('/health/ready'));

    const live = await app().get('/health/live');
    expect(live.status).toBe(200);
    expect(live.body).toEqual({ success: true, data: { status: 'alive' } });

    expectUnavailable(await login());
    expectUnavailable(await app().get('/api/auth/me', { token: outage.user.access }));
    expectUnavailable(await app().post('/api/auth/refresh', { refresh_token: outage.user.refresh }));
    expectUnavailable(
      await app().post('/api/auth/register', { email: 'new-during-outage@example.com', password: 'password-123', name: 'Outage' }),
    );
    expectUnavailable(await app().post('/api/auth/login', { username: outage.user.email, password: outage.user.password }, { form: true }));
    // Forgot-password answers before it touches the database (its timing must not tell which e-mails
    // exist), so it answers as always; the lookup after the answer fails and is logged.
    const forgot = await app().post('/api/auth/forgot-password', { email: outage.user.email });
    expect(forgot.status).toBe(200);

    // The same again, many at once: every one answers with the 503.
    const burst = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        i % 3 === 0 ? app().get('/health/ready') : i % 3 === 1 ? login() : app().get('/api/auth/me', { token: outage.user.access }),
      ),
    );
    for (const res of burst) expect({ status: res.status, body: res.body }).toEqual({ status: 503, body: UNAVAILABLE });

    // Requests that need no database still work, and so do those that fail before reaching it.
    expect((await app().get('/health/')).status).toBe(200);
    expect((await app().get('/api/auth/me')).status).toBe(401);
    expect((await app().post('/api/auth/login/json', { email: 'x' })).status).toBe(422);
  }, 60_000);

  it('recovers without a restart once the server is back: ready, login, the old token', async () => {
    await outage.cluster.start();
    await waitFor(async () => (await app().get('/health/ready')).status === 200, RECOVERY_BUDGET_MS);
    await waitFor(async () => (await login()).status === 200, RECOVERY_BUDGET_MS);

    const res = await login();
    expect(res.status).toBe(200);
    expect(res.body.data.user.email).toBe(outage.user.email);
    // Tokens from before the outage still work: nothing was lost.
    const me = await app().get('/api/auth/me', { token: outage.user.access });
    expect(me.status).toBe(200);
    const refreshed = await app().post('/api/auth/refresh', { refresh_token: outage.user.refresh });
    expect(refreshed.status).toBe(200);
    outage.user.access = refreshed.body.data.access_token;
    outage.user.refresh = refreshed.body.data.refresh_token;
    // Nothing was written while the server was down.
    const admin = await app().adminToken();
    const list = await app().get('/api/users?q=new-during-outage', { token: admin });
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([]);
  }, 60_000);

  it('answers requests racing a fast shutdown with 200 or 503, never a 500, and recovers again', async () => {
    // A steady stream of requests while the server shuts down under them.
    const adminAccess = await app().adminToken();
    const statuses: number[] = [];
    const bodies: unknown[] = [];
    let stop = false;
    const worker = async (i: number) => {
      while (!stop) {
        // Reads, a readiness probe, and registrations (a transaction of several statements).
        const res =
          i % 4 === 0
            ? await app().get('/api/auth/me', { token: outage.user.access })
            : i % 4 === 1
              ? await app().get('/api/users?per_page=5', { token: adminAccess })
              : i % 4 === 2
                ? await app().get('/health/ready')
                : await app().post('/api/auth/register', {
                    email: `race-${i}-${statuses.length}-${Date.now()}@example.com`,
                    password: 'password-123',
                    name: 'Race',
                  });
        statuses.push(res.status);
        if (res.status >= 300) bodies.push(res.body);
      }
    };

    const workers = Array.from({ length: 8 }, (_, i) => worker(i));
    // Every worker has been answered while the server runs, then the server stops under them, and
    // the stream goes on until the outage has answered some of them.
    await until(() => statuses.length >= 8, 'the first answers', RECOVERY_BUDGET_MS);
    await outage.cluster.stop('fast');
    const answeredBeforeStop = statuses.length;
    await until(() => statuses.length >= answeredBeforeStop + 8 && statuses.includes(503), 'answers during the outage', RECOVERY_BUDGET_MS);
    stop = true;
    await Promise.all(workers);

    expect(statuses.length).toBeGreaterThan(6);
    expect(statuses.filter((s) => s !== 200 && s !== 201 && s !== 503)).toEqual([]);
    for (const body of bodies) expect(body).toEqual(UNAVAILABLE);
    expect(statuses).toContain(503);

    expectUnavailable(await app().get('/health/ready'));
    expectUnavailable(await login());

    await outage.cluster.start();
    await waitFor(async () => (await app().get('/health/ready')).status === 200, RECOVERY_BUDGET_MS);
    await waitFor(async () => (await login()).status === 200, RECOVERY_BUDGET_MS);
    expect((await app().get('/api/auth/me', { token: outage.user.access })).status).toBe(200);
  }, 60_000);
});
