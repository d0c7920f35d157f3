import { jest } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, truncate, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TEST_SECRET } from './support/app.js';
import { freePort } from './support/net.js';
import { copyOfCluster } from './support/pglite-template.js';
import { startServer } from './support/server.js';

/*
 * A start that cannot work stops with one line saying what to change, exit code 1, no stack and never
 * the password of DATABASE_URL: the server, `npm run migrate` and the command line alike, each a real
 * process. The suite does not depend on the jest project's database, so it runs once: in the postgres
 * project when there is one (the unknown database and role need that server), otherwise in the
 * embedded one without those two cases.
 */

// Each case starts a whole process, which takes a while on a busy machine.
jest.setTimeout(180_000);

const ROOT = join(import.meta.dirname, '..');
const PASSWORD = 'Sup3r-secret-pa55word';
const serverUrl = process.env.TEST_DATABASE_URL;
const runsHere = process.env.TEST_DATABASE_KIND === 'postgres' || !serverUrl;
const describeOnce = runsHere ? describe : describe.skip;
const withPostgres = serverUrl ? it : it.skip;

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs one of the service's entry points from the sources to its end. */
function run(entry: string, args: string[], env: Record<string, string>): Promise<Exit> {
  const child = spawn(process.execPath, ['--import', './test/support/ts-register.mjs', entry, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, NODE_ENV: 'test', SECRET_KEY: TEST_SECRET, LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

const ENTRY_POINTS: Array<[string, (env: Record<string, string>) => Promise<Exit>]> = [
  [
    'the server',
    async (env) => {
      const running = await startServer(env);
      const code = await running.exited;
      // 'exit' may come before the last of stderr has been read.
      await new Promise<void>((resolve) => (running.child.stderr!.readableEnded ? resolve() : running.child.stderr!.once('end', resolve)));
      return { code, stdout: JSON.stringify(running.lines), stderr: running.stderr() };
    },
  ],
  ['npm run migrate', (env) => run('src/migrate.ts', [], env)],
  ['the command line', (env) => run('src/cli/index.ts', ['migrate', 'status'], env)],
];

/** Exit 1 and exactly one line on stderr matching `expected`, no stack, and the password nowhere. */
function expectOneLine(exit: Exit, expected: RegExp): void {
  expect({ code: exit.code, stderr: exit.stderr }).toEqual({ code: 1, stderr: expect.stringMatching(expected) });
  expect(exit.stderr.endsWith('\n')).toBe(true);
  expect(exit.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(exit.stderr).not.toMatch(/\bat .*:\d+:\d+\)?$/m);
  expect(exit.stderr).not.toMatch(/Migration .* failed/);
  expect(exit.stderr + exit.stdout).not.toContain(PASSWORD);
}

/** `serverUrl` with another user, password, database, host or port. */
function variant(change: { user?: string; database?: string; host?: string; port?: number }): string {
  const url = new URL(serverUrl ?? 'postgres://postgres@127.0.0.1:5432/account_test');
  url.username = change.user ?? url.username;
  url.password = PASSWORD;
  if (change.database !== undefined) url.pathname = `/${change.database}`;
  if (change.host !== undefined) url.hostname = change.host;
  if (change.port !== undefined) url.port = String(change.port);
  return url.toString();
}

describeOnce('a DATABASE_URL that does not lead to a database', () => {
  // Every case on the server; the other two entry points open the database the same way, so two cases
  // (one refused by the network, one by PostgreSQL) show that they report it alike.
  describe.each(ENTRY_POINTS)('%s', (name, start) => {
    const everyCase = name === 'the server' ? it : it.skip;
    const withPostgresEveryCase = name === 'the server' ? withPostgres : it.skip;

    it('names the host and port when nothing listens there', async () => {
      const port = await freePort();
      const exit = await start({ DATABASE_URL: variant({ host: '127.0.0.1', port }) });
      expectOneLine(
        exit,
        new RegExp(
          `^(error: )?cannot connect to PostgreSQL at 127\\.0\\.0\\.1:${port} \\(the host and port of DATABASE_URL\\): connection refused`,
        ),
      );
    });

    everyCase('names the host when there is no such host', async () => {
      const exit = await start({ DATABASE_URL: variant({ host: 'no-such-host.invalid' }) });
      expectOneLine(exit, /no-such-host\.invalid.*the host of DATABASE_URL was not found/);
    });

    everyCase('says the URL itself is malformed', async () => {
      const exit = await start({ DATABASE_URL: `postgres://postgres:${PASSWORD}@[not-a-host/account_test` });
      expectOneLine(exit, /DATABASE_URL is not a valid URL: expected postgres:\/\/USER:PASSWORD@HOST:PORT\/DATABASE/);
    });

    withPostgresEveryCase('names the database when it does not exist', async () => {
      const exit = await start({ DATABASE_URL: variant({ database: 'no_such_database_here' }) });
      expectOneLine(exit, /has no database "no_such_database_here" \(the database name in DATABASE_URL\)/);
    });

    withPostgres('names the user when the server refuses it', async () => {
      const exit = await start({ DATABASE_URL: variant({ user: 'no_such_role_here' }) });
      expectOneLine(exit, /refused the user of DATABASE_URL: role "no_such_role_here" does not exist/);
    });
  });
});

describeOnce('an APP_URL without its scheme', () => {
  it.each(['accounts.example.com', '127.0.0.1:8000'])('stops the server with one line naming APP_URL: %s', async (appUrl) => {
    const exit = await ENTRY_POINTS[0][1]({ DATA_DIR: 'memory://', APP_URL: appUrl });
    expectOneLine(
      exit,
      new RegExp(
        `^Invalid configuration: APP_URL must be the service's public address with its scheme, such as https://accounts\\.example\\.com; got "${appUrl.replace(/\./g, '\\.')}"$`,
        'm',
      ),
    );
  });
});

describeOnce('a DATA_DIR that is not a data folder of this service', () => {
  const folders: string[] = [];
  const folder = async (): Promise<string> => {
    const dir = await mkdtemp(join(tmpdir(), 'account-data-dir-'));
    folders.push(dir);
    return dir;
  };
  afterAll(async () => {
    for (const dir of folders) await rm(dir, { recursive: true, force: true });
  });

  describe.each(ENTRY_POINTS)('%s', (name, start) => {
    const everyCase = name === 'the server' ? it : it.skip;

    it('refuses a folder holding other files, and writes nothing into it, not even a development key', async () => {
      const dir = await folder();
      await writeFile(join(dir, 'notes.txt'), 'mine\n');
      await mkdir(join(dir, 'Documents'));
      const exit = await start({ DATA_DIR: dir, SECRET_KEY: '', NODE_ENV: '' });
      expectOneLine(
        exit,
        new RegExp(
          `^(error: )?DATA_DIR ${dir} is not a data folder of this service \\(it holds "Documents", "notes\\.txt"\\); set DATA_DIR to a new or empty folder$`,
          'm',
        ),
      );
      expect((await readdir(dir)).sort()).toEqual(['Documents', 'notes.txt']);
    });

    everyCase("refuses another PostgreSQL version's database", async () => {
      const dir = await folder();
      await writeFile(join(dir, 'PG_VERSION'), '16\n');
      await mkdir(join(dir, 'base'));
      const exit = await start({ DATA_DIR: dir });
      expectOneLine(
        exit,
        new RegExp(
          `^DATA_DIR ${dir} holds a PostgreSQL 16 database, and the embedded database is PostgreSQL 17; set DATA_DIR to a new folder \\(or DATABASE_URL to a PostgreSQL server that can open it\\)\n$`,
        ),
      );
    });

    everyCase("refuses a damaged database with what to do, not the library's abort", async () => {
      const { dir, drop } = await copyOfCluster();
      try {
        await truncate(join(dir, 'global', 'pg_control'), 0);
        const exit = await start({ DATA_DIR: dir });
        expectOneLine(
          exit,
          new RegExp(
            `^DATA_DIR ${dir} could not be opened as the embedded database: its files are damaged or were written by another program; restore the folder from a backup, or set DATA_DIR to a new folder\n$`,
          ),
        );
      } finally {
        await drop();
      }
    });

    everyCase('refuses a damaged development key, saying what to do', async () => {
      const dir = await folder();
      await writeFile(join(dir, 'secret-key'), 'half a key\n');
      const exit = await start({ DATA_DIR: dir, SECRET_KEY: '', NODE_ENV: '' });
      expectOneLine(
        exit,
        new RegExp(
          `^DATA_DIR ${dir}: secret-key is damaged; set SECRET_KEY, or delete the file to make a new key \\(sessions, second factors and client secrets sealed with the old one stop working\\)\n$`,
        ),
      );
    });

    everyCase('refuses a file', async () => {
      const file = join(await folder(), 'data');
      await writeFile(file, 'not a folder\n');
      const exit = await start({ DATA_DIR: file });
      expectOneLine(exit, new RegExp(`^DATA_DIR ${file} is a file; set DATA_DIR to a folder\n$`));
    });
  });
});

describeOnce('a port already in use', () => {
  let holder: Server;
  let port: number;

  beforeAll(async () => {
    port = await freePort();
    holder = createServer();
    await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => holder.close(() => resolve())));

  it('stops the server with one line naming the port and PORT', async () => {
    const running = await startServer({ DATA_DIR: 'memory://', PORT: String(port) });
    expect(await running.exited).toBe(1);
    await new Promise<void>((resolve) => (running.child.stderr!.readableEnded ? resolve() : running.child.stderr!.once('end', resolve)));
    expect(running.stderr()).toBe(`port ${port} on 127.0.0.1 is already in use; set PORT=... to another port\n`);
    // The holder still has it: the server did not take it over.
    expect(holder.listening).toBe(true);
  });
});
