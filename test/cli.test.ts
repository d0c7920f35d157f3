import { jest } from '@jest/globals';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { sql } from 'kysely';
import { main, type CliIo } from '../src/cli/index.js';
import { migrations } from '../migrations/index.js';
import type { AuditEventTable } from '../src/audit/audit-repository.js';
import { startTestApp, suiteDatabase, TEST_SECRET, uniqueEmail, type SuiteDatabase, type TestContext } from './support/app.js';
import { builtSources } from './support/build.js';
import { expectError } from './support/expect.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

interface RunOptions {
  env?: Record<string, string>;
  stdin?: CliIo['stdin'];
  /** Called with each text written to stderr, as a terminal user would read it. */
  onStderr?: (text: string) => void;
}

const BASE_ENV = { SECRET_KEY: TEST_SECRET, BCRYPT_COST: '4', LOG_LEVEL: 'silent' };
const MIGRATION_NAMES = Object.keys(migrations).sort();

/** Runs the command in this process, with captured output and an empty stdin unless given one. */
async function cli(args: string[], options: RunOptions = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, {
    stdin: options.stdin ?? Readable.from([]),
    stdout: { write: (text: string) => (stdout += text) },
    stderr: {
      write: (text: string) => {
        stderr += text;
        options.onStderr?.(text);
      },
    },
    env: { ...BASE_ENV, ...options.env },
  });
  return { code, stdout, stderr };
}

/** A PostgreSQL URL nothing listens on, so any attempt to use the database fails at once. */
/**
 * A database address where nothing listens: port 1 is privileged and unused, so the connection is
 * refused (a port freed a moment ago could be taken again by another test's server meanwhile).
 */
const DEAD_DATABASE_URL = 'postgres://nobody@127.0.0.1:1/nothing';

describe('usage', () => {
  // Arguments are checked before the database is opened: this one would fail with exit code 1.
  const unreachable = { DATABASE_URL: DEAD_DATABASE_URL };

  it.each([[[]], [['help']], [['--help']], [['-h']], [['purge', '--help']]])('%j prints the usage on stdout and exits 0', async (args) => {
    const run = await cli(args, { env: unreachable });
    expect(run).toEqual({ code: 0, stdout: expect.stringContaining('Usage: npm run cli -- <command>'), stderr: '' });
    for (const command of ['migrate up', 'migrate down', 'migrate status', 'create-admin', 'revoke-sessions --user', 'purge']) {
      expect(run.stdout).toContain(command);
    }
  });

  it.each([
    [['frobnicate'], 'unknown command "frobnicate"'],
    [['migrate'], 'migrate needs up, down or status'],
    [['migrate', 'sideways'], 'unknown migrate action "sideways"'],
    [['migrate', 'up', 'now'], 'unexpected argument "now"'],
    [['purge', '--bogus'], "Unknown option '--bogus'"],
    [['purge', '--user', '1'], 'purge does not take --user'],
    [['revoke-sessions'], 'revoke-sessions needs --user'],
    [['revoke-sessions', '--user'], "Option '--user <value>' argument missing"],
    [['revoke-sessions', '--user', 'somebody'], '--user takes a user id or an e-mail address'],
    [['create-admin'], 'create-admin needs --email'],
    [['create-admin', '--email', 'not-an-address'], '"not-an-address" is not an e-mail address'],
    [['create-admin', '--email', 'a@example.com', '--name', '   '], '--name must be 1 to 100 characters'],
  ])('%j prints the problem and the usage on stderr and exits 2', async (args, problem) => {
    const run = await cli(args, { env: unreachable });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(problem);
    expect(run.stderr).toContain('Usage: npm run cli -- <command>');
  });

  it('exits 1 with one clear line when the database cannot be reached, and a stack only with LOG_LEVEL=debug', async () => {
    const run = await cli(['migrate', 'status'], { env: unreachable });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      'error: cannot connect to PostgreSQL at 127.0.0.1:1 (the host and port of DATABASE_URL): connection refused, nothing is listening there\n',
    );

    const debug = await cli(['migrate', 'status'], { env: { ...unreachable, LOG_LEVEL: 'debug' } });
    expect(debug.code).toBe(1);
    expect(debug.stderr).toMatch(/^error: cannot connect to PostgreSQL at 127\.0\.0\.1:1 /);
    expect(debug.stderr).toMatch(/\n\s+at /);
  });

  it('exits 1 naming each bad setting', async () => {
    const run = await cli(['purge'], { env: { SECRET_KEY: 'short', HOUSEKEEPING_BATCH_SIZE: '0' } });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('SECRET_KEY must be at least 32 bytes with HS256');
    expect(run.stderr).toContain('HOUSEKEEPING_BATCH_SIZE must be between');
  });
});

describe('migrate', () => {
  let database: SuiteDatabase;
  beforeAll(async () => {
    database = await suiteDatabase({ empty: true });
  });
  afterAll(() => database.drop());

  const migrate = (action: string) => cli(['migrate', action], { env: database.env });
  const statusLines = async () => {
    const run = await migrate('status');
    expect(run.code).toBe(0);
    return run.stdout
      .trimEnd()
      .split('\n')
      .map((line) => line.split(/\s+/).slice(0, 2).join(' '));
  };

  it('lists, applies and undoes migrations one step at a time', async () => {
    expect(await statusLines()).toEqual(MIGRATION_NAMES.map((name) => `pending ${name}`));

    const up = await migrate('up');
    expect(up.code).toBe(0);
    expect(up.stdout).toBe(`${MIGRATION_NAMES.map((name) => `applied  ${name}\n`).join('')}migrated the ${database.kind} database\n`);
    expect(await statusLines()).toEqual(MIGRATION_NAMES.map((name) => `applied ${name}`));

    const last = MIGRATION_NAMES[MIGRATION_NAMES.length - 1];
    const down = await migrate('down');
    expect(down).toEqual({ code: 0, stdout: `undone   ${last}\n`, stderr: '' });
    expect(await statusLines()).toEqual(MIGRATION_NAMES.map((name) => `${name === last ? 'pending' : 'applied'} ${name}`));

    expect((await migrate('up')).stdout).toBe(`applied  ${last}\nmigrated the ${database.kind} database\n`);
    expect(await migrate('up')).toEqual({ code: 0, stdout: `the ${database.kind} database is up to date\n`, stderr: '' });
  });

  it('says so when there is nothing to undo', async () => {
    for (let i = 0; i < MIGRATION_NAMES.length; i++) expect((await migrate('down')).code).toBe(0);
    expect(await migrate('down')).toEqual({ code: 0, stdout: 'no migration is applied; nothing to undo\n', stderr: '' });
    expect(await statusLines()).toEqual(MIGRATION_NAMES.map((name) => `pending ${name}`));
  });
});

describe('commands beside the service', () => {
  const APP_ENV = { HOUSEKEEPING_INTERVAL_SECONDS: '0' };
  let owner: TestContext;
  /** The running app, or undefined while it has stepped aside for a command. */
  let running: TestContext | undefined;

  beforeAll(async () => {
    owner = await startTestApp(APP_ENV);
    running = owner;
  });
  afterAll(async () => {
    await running?.stop();
    await owner.close();
  });

  /** The app on the suite's database, started again if a command made it step aside. */
  async function service(): Promise<TestContext> {
    running ??= await startTestApp(APP_ENV, { sameDatabaseAs: owner });
    return running;
  }

  /**
   * Runs the command on the app's database. The embedded database serves one process at a time, so
   * there the app steps aside while commands run, as an operator stops the server first.
   */
  async function cliOnAppDatabase(args: string[], options: RunOptions = {}): Promise<Run> {
    if (owner.kind === 'embedded' && running) {
      await running.stop();
      running = undefined;
    }
    return cli(args, { ...options, env: { ...owner.database.env, ...options.env } });
  }

  const login = async (email: string, password: string) => (await service()).post('/api/auth/login/json', { email, password });
  const userByEmail = async (email: string) =>
    (await service()).db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
  /** Asks the command line itself whether an account exists, so that no app has to start for it. */
  const noAccount = async (email: string) =>
    expect(await cliOnAppDatabase(['revoke-sessions', '--user', email])).toEqual({
      code: 1,
      stdout: '',
      stderr: `error: no user with e-mail ${email}\n`,
    });

  /** A stdin that acts as a terminal and answers each prompt with the next of `answers`. */
  function terminal(answers: string[]) {
    const stdin = Object.assign(new PassThrough(), { isTTY: true, setRawMode: jest.fn() });
    const onStderr = (text: string) => {
      if (text.endsWith(': ')) stdin.write(answers.shift());
    };
    return { stdin, onStderr };
  }

  describe('create-admin', () => {
    it('creates a verified admin with the password from ADMIN_PASSWORD, who can then administer users', async () => {
      const email = uniqueEmail('root');
      const run = await cliOnAppDatabase(['create-admin', '--email', email.toUpperCase(), '--name', ' Root Admin '], {
        env: { ADMIN_PASSWORD: 'a-long-admin-secret' },
      });
      const created = await userByEmail(email);
      expect(run).toEqual({ code: 0, stdout: `created the admin ${email} (id ${created?.id})\n`, stderr: '' });
      expect(created).toMatchObject({ role: 'admin', name: 'Root Admin', email_verified: true, is_active: true, deleted_at: null });
      const events = await sql<{ event_type: string; actor_user_id: number | null; details: unknown }>`
        select event_type, actor_user_id, details from audit_events where subject_user_id = ${created?.id}`.execute((await service()).db);
      expect(events.rows).toEqual([
        { event_type: 'user.created', actor_user_id: null, details: { role: 'admin', is_active: true, source: 'cli' } },
      ]);

      const res = await login(email, 'a-long-admin-secret');
      expect(res.status).toBe(200);
      expect(res.body.data.user).toMatchObject({ email, role: 'admin', email_verified: true });
      expect((await (await service()).get('/api/users', { token: res.body.data.access_token })).status).toBe(200);
    });

    it('reads the password from the first line of stdin when it is not a terminal, and takes the e-mail from ADMIN_EMAIL', async () => {
      const email = uniqueEmail('piped');
      const run = await cliOnAppDatabase(['create-admin'], {
        env: { ADMIN_EMAIL: email },
        stdin: Readable.from(['piped-admin-secret\n', 'ignored\n']),
      });
      expect(run.code).toBe(0);
      expect((await userByEmail(email))?.name).toBe('Administrator');
      expect((await login(email, 'piped-admin-secret')).status).toBe(200);
    });

    it('asks twice on a terminal, in raw mode so that nothing is echoed', async () => {
      const email = uniqueEmail('typed');
      // Typed key by key: a slip corrected with backspace, then Enter.
      const { stdin, onStderr } = terminal(['typed-admin-secretx\u007f\r', 'typed-admin-secret\r']);
      const run = await cliOnAppDatabase(['create-admin', '--email', email], { stdin, onStderr });
      expect(run.code).toBe(0);
      expect(run.stderr).toBe('Password: \nRepeat the password: \n');
      expect(run.stdout).not.toContain('secret');
      expect(stdin.setRawMode.mock.calls).toEqual([[true], [false], [true], [false]]);
      expect((await login(email, 'typed-admin-secret')).status).toBe(200);
    });

    it('refuses two different passwords typed on a terminal', async () => {
      const email = uniqueEmail('typo');
      const run = await cliOnAppDatabase(['create-admin', '--email', email], terminal(['first-admin-secret\r', 'other-admin-secret\r']));
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('error: the two passwords differ');
      await noAccount(email);
    });

    it.each([
      ['short', 'the password must be at least 8 characters'],
      ['password123', 'the password is too common'],
      ['é'.repeat(37), 'the password must NOT be longer than 72 bytes of UTF-8'],
    ])('applies the API password rules: %s', async (password, message) => {
      const email = uniqueEmail('weak');
      const run = await cliOnAppDatabase(['create-admin', '--email', email], { env: { ADMIN_PASSWORD: password } });
      expect(run).toEqual({ code: 1, stdout: '', stderr: `error: ${message}\n` });
      await noAccount(email);
    });

    it('refuses a password equal to the e-mail', async () => {
      const email = uniqueEmail('same');
      const run = await cliOnAppDatabase(['create-admin', '--email', email], { env: { ADMIN_PASSWORD: email } });
      expect(run).toEqual({ code: 1, stdout: '', stderr: 'error: the password must not be the same as the e-mail address\n' });
      await noAccount(email);
    });

    it('fails when no password is given at all', async () => {
      const email = uniqueEmail('nopass');
      const run = await cliOnAppDatabase(['create-admin', '--email', email]);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('error: no password');
      await noAccount(email);
    });

    it('leaves an existing account as it is rather than promoting it', async () => {
      const user = await (await service()).register();
      const run = await cliOnAppDatabase(['create-admin', '--email', user.email], { env: { ADMIN_PASSWORD: 'another-admin-secret' } });
      expect(run).toEqual({
        code: 1,
        stdout: '',
        stderr: `error: an account with the e-mail ${user.email} already exists; nothing was changed\n`,
      });
      expect(await userByEmail(user.email)).toMatchObject({ role: 'user' });
      expect((await login(user.email, user.password)).status).toBe(200);
      expectError(await login(user.email, 'another-admin-secret'), 401, 'INVALID_CREDENTIALS');
    });
  });

  describe('revoke-sessions', () => {
    it('signs a user out of every session, found by e-mail, and says how many', async () => {
      const app = await service();
      const user = await app.register();
      const second = await login(user.email, user.password);
      const bystander = await app.register();

      const run = await cliOnAppDatabase(['revoke-sessions', '--user', user.email.toUpperCase()]);
      expect(run).toEqual({ code: 0, stdout: `revoked 2 sessions of user ${user.id} (${user.email})\n`, stderr: '' });

      const after = await service();
      expectError(await after.post('/api/auth/refresh', { refresh_token: user.refresh }), 401, 'UNAUTHORIZED');
      expectError(await after.post('/api/auth/refresh', { refresh_token: second.body.data.refresh_token }), 401, 'UNAUTHORIZED');
      expectError(await after.get('/api/auth/me', { token: user.access }), 401, 'UNAUTHORIZED');
      // Nobody else is signed out, and the user can sign in again.
      expect((await after.get('/api/auth/me', { token: bystander.access })).status).toBe(200);
      expect((await login(user.email, user.password)).status).toBe(200);
    });

    it('records the revocation in the audit trail, as the command line and not as any user', async () => {
      const app = await service();
      const user = await app.register();
      await login(user.email, user.password);
      expect((await cliOnAppDatabase(['revoke-sessions', '--user', String(user.id)])).code).toBe(0);

      const after = await service();
      const events = await after.db
        .withTables<{ audit_events: AuditEventTable }>()
        .selectFrom('audit_events')
        .selectAll()
        .where('subject_user_id', '=', user.id)
        .where('event_type', '=', 'session.revoked')
        .execute();
      expect(events).toEqual([
        expect.objectContaining({
          actor_user_id: null,
          ip: null,
          user_agent: null,
          request_id: null,
          details: { all: true, sessions: 2, source: 'cli' },
        }),
      ]);
      // An admin reads it through the API like any other event.
      const listed = await after.get(`/api/audit-events?user_id=${user.id}&event_type=session.revoked`, {
        token: await after.adminToken(),
      });
      expect(listed.status).toBe(200);
      expect(listed.body.data).toEqual([
        expect.objectContaining({
          event_type: 'session.revoked',
          actor_user_id: null,
          subject_user_id: user.id,
          details: { all: true, sessions: 2, source: 'cli' },
        }),
      ]);
    });

    it('finds a user by id, and counts only sessions that were still live', async () => {
      const user = await (await service()).register();
      expect((await cliOnAppDatabase(['revoke-sessions', '--user', String(user.id)])).stdout).toBe(
        `revoked 1 session of user ${user.id} (${user.email})\n`,
      );
      expect((await cliOnAppDatabase(['revoke-sessions', '--user', String(user.id)])).stdout).toBe(
        `revoked 0 sessions of user ${user.id} (${user.email})\n`,
      );
    });

    it('exits 1 for a user that does not exist', async () => {
      expect(await cliOnAppDatabase(['revoke-sessions', '--user', '987654321'])).toEqual({
        code: 1,
        stdout: '',
        stderr: 'error: no user with id 987654321\n',
      });
      await noAccount('nobody@example.com');
    });
  });

  describe('purge', () => {
    it('runs a whole pass now and prints what it removed', async () => {
      const app = await service();
      const user = await app.register();
      const longAgo = new Date(Date.now() - 48 * 3600 * 1000);
      for (let i = 0; i < 3; i++) {
        await app.db
          .insertInto('sessions')
          .values({ id: randomUUID(), user_id: user.id, refresh_token_hash: randomUUID(), expires_at: longAgo })
          .execute();
      }
      await app.db
        .insertInto('account_tokens')
        .values({
          user_id: user.id,
          purpose: 'password_reset',
          token_hash: randomUUID(),
          email: user.email,
          expires_at: longAgo,
          used_at: longAgo,
        })
        .execute();

      const run = await cliOnAppDatabase(['purge'], { env: { HOUSEKEEPING_BATCH_SIZE: '2' } });
      expect(run).toEqual({ code: 0, stdout: 'sessions        3\naccount_tokens  1\nemail_codes     0\nmail_outbox     0\n', stderr: '' });
      const after = await service();
      expect(await after.db.selectFrom('sessions').select('id').where('user_id', '=', user.id).execute()).toHaveLength(1);
      expect((await after.get('/api/auth/me', { token: user.access })).status).toBe(200);
    });
  });
});

// The build is the same whatever the database: it is checked once, in the embedded half of the suite.
const buildsOnce = process.env.TEST_DATABASE_KIND !== 'postgres';
const builtOnce = buildsOnce ? describe : describe.skip;

// Started as the file loads, so that the compiler runs in its own process while the tests above run.
const building = buildsOnce ? builtSources() : undefined;
building?.catch(() => undefined); // awaited, and so reported, by the suite below

builtOnce('the built command, as its own process', () => {
  let outDir: string;
  let database: SuiteDatabase;

  beforeAll(async () => {
    outDir = await building!;
    if (!existsSync(join(outDir, 'src', 'cli', 'index.js'))) throw new Error('the build produced no src/cli/index.js');
    database = await suiteDatabase({ empty: true });
  }, 120_000);
  afterAll(async () => {
    await database?.drop();
  });

  /** Runs `node <build>/src/cli/index.js`, as `npm run cli` does, with stdin as given and a clean environment. */
  function run(args: string[], env: Record<string, string> = {}, stdin = ''): Promise<Run> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [join(outDir, 'src', 'cli', 'index.js'), ...args], {
        cwd: outDir,
        env: { PATH: process.env.PATH ?? '', ...BASE_ENV, ...env },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk) => (stdout += chunk));
      child.stderr.on('data', (chunk) => (stderr += chunk));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
      child.stdin.end(stdin);
    });
  }

  it('prints the usage and exits 0, or 2 for a command it does not know', async () => {
    expect(await run(['--help'])).toMatchObject({ code: 0, stdout: expect.stringContaining('Usage: npm run cli'), stderr: '' });
    expect(await run(['frobnicate'])).toMatchObject({
      code: 2,
      stdout: '',
      stderr: expect.stringContaining('unknown command "frobnicate"'),
    });
  });

  it('migrates, creates an admin from stdin and exits 0; a dead database exits 1 without a stack', async () => {
    const up = await run(['migrate', 'up'], database.env);
    expect(up.code).toBe(0);
    expect(up.stdout).toContain(`migrated the ${database.kind} database`);

    const email = uniqueEmail('process');
    const created = await run(['create-admin', '--email', email], database.env, 'process-admin-secret\n');
    expect(created).toMatchObject({ code: 0, stdout: expect.stringContaining(`created the admin ${email}`), stderr: '' });
    expect(await run(['revoke-sessions', '--user', email], database.env)).toMatchObject({
      code: 0,
      stdout: expect.stringContaining('revoked 0 sessions'),
    });

    const dead = await run(['purge'], { DATABASE_URL: DEAD_DATABASE_URL });
    expect(dead.code).toBe(1);
    expect(dead.stderr).toMatch(/^error: /);
    expect(dead.stderr).not.toMatch(/\n\s+at /);
  });
});
