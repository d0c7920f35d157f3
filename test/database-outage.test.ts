import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startTestApp, type Response, type TestContext } from './support/app';

/*
 * A real PostgreSQL server that goes away under a running service and comes back. The suite makes
 * a private cluster (never the machine's shared one), points the service at it, stops and
 * restarts it, and checks what clients see meanwhile.
 *
 * The cluster is independent of the jest project, so the suite runs once: in the 'postgres'
 * project when there is one, otherwise in the 'embedded' project.
 */

const run = promisify(execFile);
const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';
const binariesPresent = ['initdb', 'pg_ctl', 'postgres'].every((name) => existsSync(join(PG_BIN, name)));
const postgresProjectActive = Boolean(process.env.TEST_DATABASE_URL);
const thisProjectRunsIt = process.env.TEST_DATABASE_KIND === 'postgres' || !postgresProjectActive;

const skipReason = !binariesPresent
  ? `PostgreSQL binaries not found in ${PG_BIN}`
  : !thisProjectRunsIt
    ? 'runs once, in the postgres project'
    : undefined;
const describeOutage = skipReason ? describe.skip : describe;

if (skipReason) {
  // eslint-disable-next-line no-console
  console.log(`database-outage suite skipped in the ${process.env.TEST_DATABASE_KIND ?? 'embedded'} project: ${skipReason}`);
}

/** Generous wall-clock budgets for a loaded CI machine; the contract's numbers are tighter. */
const READY_BUDGET_MS = 2000;
const REQUEST_BUDGET_MS = 4000;
const RECOVERY_BUDGET_MS = 10_000;

/** A private cluster in a temporary folder, run as a non-root user when the tests run as root. */
class Cluster {
  readonly dataDir: string;
  private readonly logFile: string;
  private running = false;

  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly asUser: string | undefined,
  ) {
    this.dataDir = join(dir, 'data');
    this.logFile = join(dir, 'server.log');
  }

  static async create(): Promise<Cluster> {
    const dir = await mkdtemp(join(tmpdir(), `outage-pg-${process.env.TEST_DATABASE_KIND ?? 'x'}-`));
    // initdb refuses to run as root: hand the folder to the postgres account and run as it.
    let asUser: string | undefined;
    if (process.getuid?.() === 0) {
      asUser = 'postgres';
      const { stdout } = await run('id', ['-u', asUser]);
      const { stdout: gid } = await run('id', ['-g', asUser]);
      await chown(dir, Number(stdout.trim()), Number(gid.trim()));
    }
    const cluster = new Cluster(dir, await freePort(), asUser);
    await cluster.pg('initdb', ['-D', cluster.dataDir, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions']);
    return cluster;
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  async start(): Promise<void> {
    const options = [
      `-p ${this.port}`,
      `-c listen_addresses=127.0.0.1`,
      `-c unix_socket_directories=${this.dir}`,
      '-c fsync=off',
      '-c full_page_writes=off',
      '-c max_connections=30',
    ].join(' ');
    await this.pg('pg_ctl', ['-D', this.dataDir, '-l', this.logFile, '-o', options, '-w', '-t', '30', 'start']);
    this.running = true;
  }

  async stop(mode: 'immediate' | 'fast'): Promise<void> {
    await this.pg('pg_ctl', ['-D', this.dataDir, '-m', mode, '-w', '-t', '30', 'stop']);
    this.running = false;
  }

  /** Stops the server if it runs and removes every file of the cluster. */
  async destroy(): Promise<void> {
    if (this.running || existsSync(join(this.dataDir, 'postmaster.pid'))) {
      await this.pg('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', '-t', '30', 'stop']).catch(() => undefined);
      this.running = false;
    }
    await rm(this.dir, { recursive: true, force: true });
  }

  async log(): Promise<string> {
    return readFile(this.logFile, 'utf8').catch(() => '');
  }

  private async pg(tool: string, args: string[]): Promise<void> {
    const binary = join(PG_BIN, tool);
    const [command, argv] =
      this.asUser && this.asUser !== userInfo().username ? ['runuser', ['-u', this.asUser, '--', binary, ...args]] : [binary, args];
    try {
      await run(command, argv, { cwd: this.dir, timeout: 60_000 });
    } catch (error) {
      const { stderr, stdout } = error as { stderr?: string; stdout?: string };
      throw new Error(`${tool} ${args.join(' ')} failed: ${stderr || stdout || String(error)}\n${await this.log()}`);
    }
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (address && typeof address === 'object' ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Sends a request and measures how long the answer took. */
async function timed(send: () => Promise<Response>): Promise<{ res: Response; ms: number }> {
  const started = Date.now();
  const res = await send();
  return { res, ms: Date.now() - started };
}

const UNAVAILABLE = { success: false, error: { code: 'SERVICE_UNAVAILABLE', message: 'Service unavailable' } };

function expectUnavailable(res: Response, ms: number, budget = REQUEST_BUDGET_MS): void {
  expect({ status: res.status, body: res.body }).toEqual({ status: 503, body: UNAVAILABLE });
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(ms).toBeLessThan(budget);
}

/** Polls until `probe` is true or the budget runs out; returns how long it took. */
async function waitFor(probe: () => Promise<boolean>, budgetMs: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await probe()) return Date.now() - started;
    if (Date.now() - started > budgetMs) throw new Error(`not recovered within ${budgetMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describeOutage(`the PostgreSQL server goes away and comes back${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  let cluster: Cluster | undefined;
  let t: TestContext | undefined;
  let user: { email: string; password: string; access: string; refresh: string };

  const app = (): TestContext => {
    if (!t) throw new Error('the app did not start');
    return t;
  };
  const login = () => app().post('/api/auth/login/json', { email: user.email, password: user.password });

  beforeAll(async () => {
    cluster = await Cluster.create();
    await cluster.start();
    t = await startTestApp({ DATABASE_URL: cluster.url });
    const registered = await t.register();
    user = { email: registered.email, password: registered.password, access: registered.access, refresh: registered.refresh };
  }, 120_000);

  afterAll(async () => {
    // The app first (its pool would otherwise keep reconnecting), then the cluster and its folder.
    await t?.close().catch(() => undefined);
    await cluster?.destroy();
  }, 60_000);

  it('is ready and serves requests while the server runs', async () => {
    const ready = await app().get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ success: true, data: { status: 'ready', checks: { database: 'ok' } } });
    expect((await app().get('/api/auth/me', { token: user.access })).status).toBe(200);
    expect(app().config.databaseUrl).toBe(cluster!.url);
  });

  it('answers 503 SERVICE_UNAVAILABLE quickly once the server stops (immediate shutdown), and stays alive', async () => {
    await cluster!.stop('immediate');

    const ready = await timed(() => app().get('/health/ready'));
    expectUnavailable(ready.res, ready.ms, READY_BUDGET_MS);

    const live = await timed(() => app().get('/health/live'));
    expect(live.res.status).toBe(200);
    expect(live.res.body).toEqual({ success: true, data: { status: 'alive' } });
    expect(live.ms).toBeLessThan(1000);

    expectUnavailable(...spread(await timed(login)));
    expectUnavailable(...spread(await timed(() => app().get('/api/auth/me', { token: user.access }))));
    expectUnavailable(...spread(await timed(() => app().post('/api/auth/refresh', { refresh_token: user.refresh }))));
    expectUnavailable(...spread(await timed(() => app().post('/api/auth/register', { email: 'new-during-outage@example.com', password: 'password-123', name: 'Outage' }))));
    expectUnavailable(...spread(await timed(() => app().post('/api/auth/login', { username: user.email, password: user.password }, { form: true }))));
    // Forgot-password answers before it touches the database (its timing must not tell which e-mails
    // exist), so it answers as always; the lookup after the answer fails and is logged.
    const forgot = await timed(() => app().post('/api/auth/forgot-password', { email: user.email }));
    expect(forgot.res.status).toBe(200);
    expect(forgot.ms).toBeLessThan(REQUEST_BUDGET_MS);

    // The same again, many at once: every one answers, quickly, with the 503.
    const started = Date.now();
    const burst = await Promise.all(
      Array.from({ length: 12 }, (_, i) => (i % 3 === 0 ? app().get('/health/ready') : i % 3 === 1 ? login() : app().get('/api/auth/me', { token: user.access }))),
    );
    expect(Date.now() - started).toBeLessThan(REQUEST_BUDGET_MS * 2);
    for (const res of burst) expect({ status: res.status, body: res.body }).toEqual({ status: 503, body: UNAVAILABLE });

    // Requests that need no database still work, and so do those that fail before reaching it.
    expect((await app().get('/health/')).status).toBe(200);
    expect((await app().get('/api/auth/me')).status).toBe(401);
    expect((await app().post('/api/auth/login/json', { email: 'x' })).status).toBe(422);
  }, 60_000);

  it('recovers without a restart once the server is back: ready, login, the old token', async () => {
    await cluster!.start();
    await waitFor(async () => (await app().get('/health/ready')).status === 200, RECOVERY_BUDGET_MS);
    await waitFor(async () => (await login()).status === 200, RECOVERY_BUDGET_MS);

    const res = await login();
    expect(res.status).toBe(200);
    expect(res.body.data.user.email).toBe(user.email);
    // Tokens from before the outage still work: nothing was lost.
    const me = await app().get('/api/auth/me', { token: user.access });
    expect(me.status).toBe(200);
    const refreshed = await app().post('/api/auth/refresh', { refresh_token: user.refresh });
    expect(refreshed.status).toBe(200);
    user.access = refreshed.body.data.access_token;
    user.refresh = refreshed.body.data.refresh_token;
    // Nothing was written while the server was down.
    const admin = await app().adminToken();
    const list = await app().get('/api/users?q=new-during-outage', { token: admin });
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([]);
  }, 60_000);

  it('answers requests racing a fast shutdown with 200 or 503, never a 500 or a hang, and recovers again', async () => {
    // A steady stream of requests while the server shuts down under them.
    const adminAccess = await app().adminToken();
    const statuses: number[] = [];
    const bodies: unknown[] = [];
    let stop = false;
    const worker = async (i: number) => {
      while (!stop) {
        const started = Date.now();
        // Reads, a readiness probe, and registrations (a transaction of several statements).
        const res =
          i % 4 === 0
            ? await app().get('/api/auth/me', { token: user.access })
            : i % 4 === 1
              ? await app().get('/api/users?per_page=5', { token: adminAccess })
              : i % 4 === 2
                ? await app().get('/health/ready')
                : await app().post('/api/auth/register', { email: `race-${i}-${statuses.length}-${Date.now()}@example.com`, password: 'password-123', name: 'Race' });
        expect(Date.now() - started).toBeLessThan(REQUEST_BUDGET_MS + 1000);
        statuses.push(res.status);
        if (res.status >= 300) bodies.push(res.body);
      }
    };

    const workers = Array.from({ length: 8 }, (_, i) => worker(i));
    await new Promise((resolve) => setTimeout(resolve, 300));
    await cluster!.stop('fast');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    stop = true;
    await Promise.all(workers);

    expect(statuses.length).toBeGreaterThan(6);
    expect(statuses.filter((s) => s !== 200 && s !== 201 && s !== 503)).toEqual([]);
    for (const body of bodies) expect(body).toEqual(UNAVAILABLE);
    expect(statuses).toContain(503);

    const ready = await timed(() => app().get('/health/ready'));
    expectUnavailable(ready.res, ready.ms, READY_BUDGET_MS);
    expectUnavailable(...spread(await timed(login)));

    await cluster!.start();
    await waitFor(async () => (await app().get('/health/ready')).status === 200, RECOVERY_BUDGET_MS);
    await waitFor(async () => (await login()).status === 200, RECOVERY_BUDGET_MS);
    expect((await app().get('/api/auth/me', { token: user.access })).status).toBe(200);
  }, 60_000);
});

function spread(measured: { res: Response; ms: number }): [Response, number] {
  return [measured.res, measured.ms];
}
