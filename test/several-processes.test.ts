import { createHmac } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import { Client } from 'pg';
import { loadConfig } from '../src/config/index.js';
import { suiteDatabase, TEST_SECRET, uniqueEmail, type SuiteDatabase } from './support/app.js';
import { startServer, type Running } from './support/server.js';
import { linkToken, startSmtpServer, type TestSmtpServer } from './support/smtp.js';

// Two real server processes on one PostgreSQL database, as behind a round-robin load balancer: the
// limits a deployment is promised hold for the whole service, not per process. Nothing in the
// environment says where the counters live: with DATABASE_URL they are shared by default.

const MAX_FAILURES = 5;
const ACCOUNT_MAX_FAILURES = 12;
const WRONG = 'wrong-password-1';
const PASSWORD = 'the-owner-password-1';

interface Reply {
  status: number;
  headers: Headers;
  body: any;
}

const listening = (line: Record<string, any>) => typeof line.msg === 'string' && line.msg.startsWith('listening on');

let nextAddress = 1;
const freshIp = () => {
  const n = nextAddress++;
  return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
};

async function call(server: Running, path: string, body?: unknown, ip = '10.255.255.254', token?: string): Promise<Reply> {
  const res = await fetch(`http://127.0.0.1:${server.port}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      'x-forwarded-for': ip,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    body: text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text,
  };
}

const login = (server: Running, email: string, password: string, ip: string) =>
  call(server, '/api/auth/login/json', { email, password }, ip);

/** A 429 naming the lock that holds: this client's on the account, or the whole account's. */
function expectLocked(res: Reply, scope: 'client' | 'account' = 'client'): void {
  expect(res.status).toBe(429);
  expect(res.body).toEqual({
    success: false,
    error: {
      code: 'RATE_LIMITED',
      message: expect.stringMatching(
        scope === 'client'
          ? /^Too many failed sign-ins to this account from this client: /
          : /^Too many failed sign-ins to this account from any client: /,
      ),
    },
  });
}

const onPostgres = process.env.TEST_DATABASE_KIND === 'postgres' ? describe : describe.skip;

describe('RATE_LIMIT_STORE by default', () => {
  it('is postgres with DATABASE_URL and memory on the embedded database; memory stays a choice', () => {
    const postgres = { DATABASE_URL: 'postgres://localhost/x' };
    expect(loadConfig(postgres).limits.store).toBe('postgres');
    expect(loadConfig({}).limits.store).toBe('memory');
    expect(loadConfig({ ...postgres, RATE_LIMIT_STORE: 'memory' }).limits.store).toBe('memory');
    expect(() => loadConfig({ RATE_LIMIT_STORE: 'postgres' })).toThrow(/RATE_LIMIT_STORE=postgres needs DATABASE_URL/);
  });
});

onPostgres('two processes on one database', () => {
  let database: SuiteDatabase;
  let smtp: TestSmtpServer;
  let a: Running;
  let b: Running;
  const both = () => [a, b];

  beforeAll(async () => {
    database = await suiteDatabase();
    smtp = await startSmtpServer();
    const env = {
      ...database.env,
      RATE_LIMIT_ENABLED: 'true',
      AUTH_RATE_LIMIT_PER_MINUTE: '100000',
      RATE_LIMIT_PER_MINUTE: '100000',
      LOGIN_ACCOUNT_MAX_FAILURES: String(ACCOUNT_MAX_FAILURES),
      // Parallel guesses from one address are refused by the lockout alone, not by that address's
      // share of the password-hashing queue (which would refuse some of them before they are counted).
      PASSWORD_HASH_CALLER_MAX: '100',
      PASSWORD_HASH_QUEUE_MAX: '100',
      TRUST_PROXY: 'true',
      APP_URL: 'https://accounts.example.test',
      SMTP_URL: smtp.url,
      MAIL_POLL_INTERVAL_MS: '100',
    };
    // Started together on an empty database: both migrate it, and neither may trip over the other.
    [a, b] = await Promise.all([startServer(env), startServer(env)]);
    // A loaded machine can take a while to start two processes at once.
    await Promise.all([a.waitFor(listening, 150_000), b.waitFor(listening, 150_000)]);
  }, 180_000);
  afterAll(async () => {
    for (const server of [a, b]) server?.child.kill('SIGKILL');
    await Promise.all([a?.exited, b?.exited]);
    await smtp?.close();
    await database?.drop();
  });

  async function registerFresh(): Promise<{ id: number; email: string }> {
    const email = uniqueEmail('machines');
    const res = await call(a, '/api/auth/register', { email, password: PASSWORD, name: 'Owner' }, freshIp());
    expect(res.status).toBe(201);
    return { id: res.body.data.user.id, email };
  }

  async function failedLogins(userId: number): Promise<number> {
    const client = new Client({ connectionString: database.env.DATABASE_URL });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: number }>(
        "select count(*)::int as n from audit_events where subject_user_id = $1 and event_type = 'login.failed'",
        [userId],
      );
      return rows[0].n;
    } finally {
      await client.end();
    }
  }

  it('locks a client out after LOGIN_MAX_FAILURES failures in all, whichever process took them', async () => {
    const owner = await registerFresh();
    const attacker = freshIp();
    for (let i = 0; i < MAX_FAILURES; i++) expect((await login(both()[i % 2], owner.email, WRONG, attacker)).status).toBe(401);
    expectLocked(await login(a, owner.email, PASSWORD, attacker));
    expectLocked(await login(b, owner.email, PASSWORD, attacker));
    expect((await login(b, owner.email, PASSWORD, freshIp())).status).toBe(200);
  });

  it('locks the account for everyone after LOGIN_ACCOUNT_MAX_FAILURES failures in all', async () => {
    const owner = await registerFresh();
    // Each client stays under its own limit; the failures alternate between the processes.
    for (let i = 0; i < ACCOUNT_MAX_FAILURES; i++) {
      expect((await login(both()[i % 2], owner.email, WRONG, `10.200.${i}.1`)).status).toBe(401);
    }
    expectLocked(await login(a, owner.email, PASSWORD, freshIp()), 'account');
    expectLocked(await login(b, owner.email, PASSWORD, freshIp()), 'account');
    expect(await failedLogins(owner.id)).toBe(ACCOUNT_MAX_FAILURES);
  });

  it("a client already locked out spends none of the account's budget", async () => {
    const owner = await registerFresh();
    const attacker = freshIp();
    for (let i = 0; i < MAX_FAILURES; i++) expect((await login(both()[i % 2], owner.email, WRONG, attacker)).status).toBe(401);
    // The account-wide count's row, under the key the service stores it by (an HMAC of the e-mail).
    const digest = createHmac('sha256', TEST_SECRET).update(`login-guard\n${owner.email.toLowerCase()}`).digest('base64url');
    const key = `login-account-failures:${digest}`;
    const admin = new Client({ connectionString: database.env.DATABASE_URL });
    await admin.connect();
    try {
      // While another transaction holds that row, the locked-out client is still answered: it never touches it.
      await admin.query('begin');
      expect((await admin.query('select points from rate_limits where key = $1 for update', [key])).rows).toEqual([
        { points: MAX_FAILURES },
      ]);
      for (const server of both()) expectLocked(await login(server, owner.email, PASSWORD, attacker));
      await admin.query('commit');
      expect((await admin.query('select points from rate_limits where key = $1', [key])).rows).toEqual([{ points: MAX_FAILURES }]);
    } finally {
      await admin.end();
    }
  });

  it('checks at most LOGIN_MAX_FAILURES of 20 parallel guesses split across both', async () => {
    const owner = await registerFresh();
    const attacker = freshIp();
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => login(both()[i % 2], owner.email, `${WRONG}-${i}`, attacker)));
    expect(answers.filter((res) => res.status === 401)).toHaveLength(MAX_FAILURES);
    expect(answers.filter((res) => res.status === 429)).toHaveLength(20 - MAX_FAILURES);
    expect(await failedLogins(owner.id)).toBe(MAX_FAILURES);
  });

  it('a password reset on one process lifts the lock on the other', async () => {
    const owner = await registerFresh();
    const home = freshIp();
    // Someone at the owner's address (a shared office network) locks it out, all through one process.
    for (let i = 0; i < MAX_FAILURES; i++) expect((await login(b, owner.email, WRONG, home)).status).toBe(401);
    expectLocked(await login(a, owner.email, PASSWORD, home));
    expect((await call(a, '/api/auth/forgot-password', { email: owner.email }, home)).status).toBe(200);
    const mail = await smtp.waitFor((m) => m.to.includes(owner.email) && m.subject === 'Reset your password', 15_000);
    const reset = await call(
      a,
      '/api/auth/reset-password',
      { token: linkToken(mail, 'reset-password'), new_password: 'a-new-password-2' },
      home,
    );
    expect(reset.status).toBe(200);
    const signedIn = await login(b, owner.email, 'a-new-password-2', home);
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.data.user.id).toBe(owner.id);
  });

  it('counts wrong second factors across both, and a password re-entered between them clears nothing', async () => {
    const email = uniqueEmail('factor');
    const registered = await call(a, '/api/auth/register', { email, password: PASSWORD, name: 'Owner' }, freshIp());
    const access = registered.body.data.access_token as string;
    const started = await call(b, '/api/auth/mfa/totp', { name: 'Phone' }, freshIp(), access);
    expect(started.status).toBe(201);
    const totp = new TOTP({ secret: Secret.fromBase32(started.body.data.secret), algorithm: 'SHA1', digits: 6, period: 30 });
    const confirmed = await call(
      a,
      `/api/auth/mfa/totp/${started.body.data.factor_id}/confirm`,
      { code: totp.generate() },
      freshIp(),
      access,
    );
    expect(confirmed.status).toBe(200);
    // Not the code of this time step nor of either neighbour.
    const near = [-30_000, 0, 30_000].map((offset) => totp.generate({ timestamp: Date.now() + offset }));
    const wrong = ['000000', '111111', '222222', '333333'].find((code) => !near.includes(code))!;
    const client = freshIp();
    const guessRound = async (server: Running, guesses: number[]) => {
      const password = await login(server, email, PASSWORD, client);
      expect(password.status).toBe(403);
      const statuses: number[] = [];
      for (let i = 0; i < guesses.length; i++) {
        const res = await call(
          server,
          '/api/auth/mfa/verify',
          { mfa_token: password.body.error.mfa_token, method: 'totp', code: wrong },
          client,
        );
        statuses.push(res.status);
      }
      expect(statuses).toEqual(guesses);
    };
    // "Password, four wrong codes" on one process, then again on the other: the fifth wrong code locks.
    await guessRound(a, [400, 400, 400, 400]);
    await guessRound(b, [400, 429]);
    expectLocked(await login(a, email, PASSWORD, client));
  });

  it('says once per outage that the shared store failed, counts in memory meanwhile, and says when it is back', async () => {
    const failedLine = (line: Record<string, any>) => typeof line.msg === 'string' && line.msg.startsWith('rate-limit store failed');
    const backLine = (line: Record<string, any>) => line.msg === 'rate-limit store answers again: counters are shared again';
    const fallbacks = async () => {
      const scrape = await call(a, '/metrics');
      expect(scrape.status).toBe(200);
      const line = (scrape.body as string).split('\n').find((l) => l.startsWith('rate_limit_store_fallbacks_total '));
      return Number(line?.split(' ')[1]);
    };
    const owner = await registerFresh();
    expect(await fallbacks()).toBe(0);
    const admin = new Client({ connectionString: database.env.DATABASE_URL });
    await admin.connect();
    try {
      await admin.query('alter table rate_limits rename to rate_limits_away');
      // The service keeps answering, counting in this process's memory.
      const logins = () => a.lines.filter((line) => line.msg === 'request' && line.path === '/api/auth/login/json').length;
      const before = logins();
      for (let i = 0; i < 3; i++) expect((await login(a, owner.email, WRONG, freshIp())).status).toBe(401);
      expect(await fallbacks()).toBeGreaterThanOrEqual(3);
      // The access line of the third login comes after every line the three of them wrote.
      await a.waitFor(() => logins() >= before + 3);
      expect(a.lines.filter(failedLine)).toHaveLength(1);
      expect(a.lines.filter(failedLine)[0]).toMatchObject({
        level: 50,
        err: expect.objectContaining({ message: expect.stringMatching(/rate_limits/) }),
      });

      await admin.query('alter table rate_limits_away rename to rate_limits');
      expect((await login(a, owner.email, PASSWORD, freshIp())).status).toBe(200);
      await a.waitFor(backLine);

      // A second outage is said again.
      await admin.query('alter table rate_limits rename to rate_limits_away');
      expect((await login(a, owner.email, WRONG, freshIp())).status).toBe(401);
      await a.waitFor((line) => failedLine(line) && a.lines.filter(failedLine).length === 2);
    } finally {
      await admin.query('alter table if exists rate_limits_away rename to rate_limits');
      await admin.end();
    }
  });
});

onPostgres('a production start', () => {
  let database: SuiteDatabase;
  beforeAll(async () => {
    database = await suiteDatabase();
  });
  afterAll(() => database?.drop());

  const production = { NODE_ENV: 'production', MAIL_LOG_LINKS: 'true', RATE_LIMIT_ENABLED: 'true' };
  const warnings = (server: Running) => server.lines.filter((line) => line.level === 40).map((line) => line.msg as string);

  const STARTS_MS = 180_000;

  it(
    'warns when the counters stay in each process with a database, and when APP_URL is unset',
    async () => {
      const server = await startServer({ ...database.env, ...production, RATE_LIMIT_STORE: 'memory' });
      try {
        await server.waitFor(listening, 150_000);
        expect(warnings(server)).toEqual(
          expect.arrayContaining([
            expect.stringMatching(/^RATE_LIMIT_STORE=memory: each process counts rate limits and failed sign-ins on its own/),
            expect.stringMatching(
              /^APP_URL is not set: links in e-mails and the token issuer \(JWT_ISSUER\) default to this process's own address/,
            ),
          ]),
        );
      } finally {
        server.child.kill('SIGKILL');
        await server.exited;
      }
    },
    STARTS_MS,
  );

  it(
    'says neither with the defaults and APP_URL set',
    async () => {
      const server = await startServer({ ...database.env, ...production, APP_URL: 'https://accounts.example.test' });
      try {
        await server.waitFor(listening, 150_000);
        expect(warnings(server).filter((msg) => /RATE_LIMIT_STORE|APP_URL/.test(msg))).toEqual([]);
      } finally {
        server.child.kill('SIGKILL');
        await server.exited;
      }
    },
    STARTS_MS,
  );
});
