import { request as httpRequest } from 'node:http';
import { availableParallelism } from 'node:os';
import { loadConfig } from '../src/config/index.js';
import { startTestApp, suiteDatabase, uniqueEmail, type SuiteDatabase } from './support/app.js';
import { expectError } from './support/expect.js';
import { serverHasRead } from './support/net.js';
import { startServer, type Running } from './support/server.js';
import { until } from './support/wait.js';

// The real server process, started from the sources: graceful shutdown and cluster mode.

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

/** One request on a connection of its own (no keep-alive, so a cluster spreads them over workers). */
function call(port: number, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  return send(port, method, path, body, headers).done;
}

/** A request, and when it has been written out to the server (with the client's port of the connection). */
function send(
  port: number,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): { sent: Promise<number>; done: Promise<Reply> } {
  let sent!: (clientPort: number) => void;
  const written = new Promise<number>((resolve) => (sent = resolve));
  const done = new Promise<Reply>((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent: false,
        headers: { ...(payload ? { 'content-type': 'application/json' } : {}), ...headers },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : undefined }));
      },
    );
    req.on('error', reject);
    req.on('finish', () => sent(req.socket!.localPort!));
    req.end(payload);
  });
  return { sent: written, done };
}

/** A GET on a connection of its own, with the body as text. */
function fetchText(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method: 'GET', path, agent: false }, (res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Sends a registration that takes a while (a high bcrypt cost) and waits until the server is working on
 * it; `done` settles with its answer.
 */
async function slowRegistration(port: number, email: string): Promise<{ done: Promise<Reply> }> {
  const { sent, done } = send(port, 'POST', '/api/auth/register', { email, password: 'slow-password-1', name: 'Slow' });
  done.catch(() => {});
  const clientPort = await sent;
  await until(() => serverHasRead(port, clientPort), 'the server to read the registration');
  return { done };
}

const listening = (line: Record<string, any>) => typeof line.msg === 'string' && line.msg.startsWith('listening on');

describe('graceful shutdown', () => {
  let database: SuiteDatabase;
  beforeAll(async () => {
    database = await suiteDatabase();
  });
  afterAll(() => database.drop());

  it('on SIGTERM finishes the request in flight, refuses new connections, and exits 0', async () => {
    // Cost 15 makes a registration take more than a second; the shutdown timeout leaves room for a loaded machine.
    const server = await startServer({
      ...database.env,
      BCRYPT_COST: '15',
      PASSWORD_HASH_QUEUE_MAX: '10',
      SHUTDOWN_TIMEOUT_SECONDS: '120',
    });
    try {
      await server.waitFor(listening);
      const email = uniqueEmail('slow');
      const { done: slow } = await slowRegistration(server.port, email);
      server.child.kill('SIGTERM');
      await server.waitFor((line) => line.msg === 'shutting down: finishing requests in flight');
      // Refused, or reset if it reached the backlog just before the listener closed: either way not served.
      await expect(call(server.port, 'GET', '/health/live')).rejects.toThrow(/ECONNREFUSED|ECONNRESET|socket hang up/);
      const res = await slow;
      expect(res.status).toBe(201);
      expect(res.body.data.user.email).toBe(email);
      expect(await server.exited).toBe(0);
      expect(server.lines.some((line) => line.msg === 'stopped')).toBe(true);
    } finally {
      server.child.kill('SIGKILL');
    }
  });

  it('cuts requests still in flight at SHUTDOWN_TIMEOUT_SECONDS and still exits 0', async () => {
    const server = await startServer({ ...database.env, BCRYPT_COST: '16', PASSWORD_HASH_QUEUE_MAX: '10', SHUTDOWN_TIMEOUT_SECONDS: '0' });
    try {
      await server.waitFor(listening);
      const { done: slow } = await slowRegistration(server.port, uniqueEmail('cut'));
      server.child.kill('SIGTERM');
      await expect(slow).rejects.toThrow(/socket hang up|ECONNRESET/);
      expect(await server.exited).toBe(0);
      expect(server.lines.some((line) => line.msg === 'requests still in flight at the shutdown timeout: closing their connections')).toBe(
        true,
      );
    } finally {
      server.child.kill('SIGKILL');
    }
  });

  it('stops the same way on SIGINT', async () => {
    const server = await startServer(database.env);
    try {
      await server.waitFor(listening);
      expect((await call(server.port, 'GET', '/health/live')).status).toBe(200);
      server.child.kill('SIGINT');
      expect(await server.exited).toBe(0);
      expect(server.lines.map((line) => line.msg)).toEqual(
        expect.arrayContaining(['shutting down: finishing requests in flight', 'stopped']),
      );
    } finally {
      server.child.kill('SIGKILL');
    }
  });

  it('turns readiness to 503 once stopping begins, while liveness stays 200', async () => {
    const t = await startTestApp();
    try {
      expect((await t.get('/health/ready')).status).toBe(200);
      t.app.beginShutdown();
      const ready = await t.get('/health/ready');
      expectError(ready, 503, 'SERVICE_UNAVAILABLE');
      expect(ready.headers.connection).toBe('close');
      expect((await t.get('/health/live')).status).toBe(200);
    } finally {
      await t.close();
    }
  });
});

describe('WEB_CONCURRENCY', () => {
  it('is 1 by default, the number of cores with auto, and needs PostgreSQL above 1', () => {
    expect(loadConfig({}).server.webConcurrency).toBe(1);
    const postgres = { DATABASE_URL: 'postgres://localhost/x' };
    expect(loadConfig({ ...postgres, WEB_CONCURRENCY: 'auto' }).server.webConcurrency).toBe(availableParallelism());
    expect(() => loadConfig({ WEB_CONCURRENCY: '2' })).toThrow(/WEB_CONCURRENCY above 1 needs DATABASE_URL/);
    expect(() => loadConfig({ WEB_CONCURRENCY: 'many' })).toThrow(/WEB_CONCURRENCY must be a whole number/);
    expect(loadConfig({ ...postgres, WEB_CONCURRENCY: '3' }).server.webConcurrency).toBe(3);
  });
});

// Several processes on one database: PostgreSQL only.
const onPostgres = process.env.TEST_DATABASE_KIND === 'postgres' ? describe : describe.skip;

onPostgres('cluster mode', () => {
  let database: SuiteDatabase;
  let server: Running;
  const started = (line: Record<string, any>) => line.msg === 'worker started';

  beforeAll(async () => {
    database = await suiteDatabase();
    server = await startServer({
      ...database.env,
      WEB_CONCURRENCY: '2',
      RATE_LIMIT_ENABLED: 'true',
      AUTH_RATE_LIMIT_PER_MINUTE: '5',
      // No SECRET_KEY and nowhere to keep one: the primary makes one and every worker must use it.
      SECRET_KEY: '',
      DATA_DIR: 'memory://',
    });
    await server.waitFor((line) => line.msg === 'worker listening');
    await until(() => server.lines.filter((line) => line.msg === 'worker listening').length >= 2, 'both workers listening', 60_000, 50);
  }, 60_000);
  afterAll(async () => {
    server.child.kill('SIGKILL');
    await database.drop();
  });

  it('runs two workers that share one signing key', async () => {
    expect(server.lines.filter(started)).toHaveLength(2);
    const email = uniqueEmail('cluster');
    const registered = await call(server.port, 'POST', '/api/auth/register', { email, password: 'cluster-password-1', name: 'Cluster' });
    expect(registered.status).toBe(201);
    // Connections alternate between the workers: a token from one is accepted by both.
    const token = registered.body.data.access_token;
    for (let i = 0; i < 4; i++) {
      const me = await call(server.port, 'GET', '/api/auth/me', undefined, { authorization: `Bearer ${token}` });
      expect(me.status).toBe(200);
      expect(me.body.data.email).toBe(email);
    }
  });

  it('counts rate limits across workers', async () => {
    // Five a minute from this address, whichever worker answers; the registration above took one.
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      statuses.push(
        (await call(server.port, 'POST', '/api/auth/login/json', { email: uniqueEmail('nobody'), password: 'wrong-password-1' })).status,
      );
    }
    expect(statuses).toEqual([401, 401, 401, 401, 429, 429]);
  });

  it('answers a metrics scrape, whichever worker takes it, for every worker', async () => {
    // Connections alternate between the workers, so each one answers some of these.
    for (let i = 0; i < 6; i++) expect((await call(server.port, 'GET', '/health/live')).status).toBe(200);
    const liveCount = (text: string) =>
      text
        .split('\n')
        .filter(
          (line) =>
            line.startsWith('http_request_duration_seconds_count{') &&
            line.includes('operation_id="healthLive"') &&
            line.includes('status="200"'),
        )
        .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
    for (let i = 0; i < 4; i++) {
      const scrape = await fetchText(server.port, '/metrics');
      expect(scrape.status).toBe(200);
      expect(liveCount(scrape.body)).toBe(6);
      // One process-metrics series per name, merged over the workers, not one per worker.
      expect(scrape.body.match(/^process_start_time_seconds /gm)?.length ?? 0).toBeLessThanOrEqual(1);
    }
  });

  it('replaces a worker that dies', async () => {
    const victim = server.lines.filter(started)[0].pid as number;
    process.kill(victim, 'SIGKILL');
    await server.waitFor((line) => line.msg === 'worker died' && line.pid === victim);
    await server.waitFor((line) => started(line) && server.lines.filter(started).length === 3);
    await server.waitFor(
      (line) => line.msg === 'worker listening' && server.lines.filter((l) => l.msg === 'worker listening').length === 3,
    );
    for (let i = 0; i < 4; i++) expect((await call(server.port, 'GET', '/health/live')).status).toBe(200);
  });

  it('passes SIGTERM on to the workers and exits 0 when they have stopped', async () => {
    server.child.kill('SIGTERM');
    const code = await server.exited;
    expect(server.lines.filter((line) => line.msg === 'worker stopped').map((line) => [line.code, line.signal])).toEqual([
      [0, null],
      [0, null],
    ]);
    expect(code).toBe(0);
  });
});
