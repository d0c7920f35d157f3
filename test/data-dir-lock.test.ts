import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { TEST_SECRET, suiteDatabase, type SuiteDatabase } from './support/app.js';
import { startServer, type Running } from './support/server.js';

// The embedded database serves one process: a second server on its DATA_DIR is refused at once, a
// command-line command waits for the server to stop, and a lock left by a dead process is taken over.

const onEmbedded = process.env.TEST_DATABASE_KIND === 'postgres' ? describe.skip : describe;
const ROOT = join(import.meta.dirname, '..');
const listening = (line: Record<string, any>) => typeof line.msg === 'string' && line.msg.startsWith('listening on');
const inUse = (dir: string, pid: number) =>
  `DATA_DIR ${dir} is in use by process ${pid}; the embedded database serves one process; use DATABASE_URL for several`;

function status(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.end();
  });
}

interface Command {
  code: Promise<number | null>;
  stdout(): string;
  stderr(): string;
  /** Resolves once stderr holds `text`. */
  said(text: string): Promise<void>;
}

/** `npm run cli -- purge` in a process of its own, from the sources. */
function purge(env: Record<string, string>): Command {
  const child = spawn(process.execPath, ['--import', './test/support/ts-register.mjs', 'src/cli/index.ts', 'purge'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, NODE_ENV: 'test', SECRET_KEY: TEST_SECRET, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const waiters: Array<() => void> = [];
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => {
    err += chunk.toString('utf8');
    for (const waiter of waiters.splice(0)) waiter();
  });
  const code = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  const said = (text: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = () => {
        if (err.includes(text)) return resolve();
        waiters.push(check);
      };
      check();
      void code.then(() => (err.includes(text) ? resolve() : reject(new Error(`exited without saying ${text}; stderr: ${err}`))));
    });
  return { code, stdout: () => out, stderr: () => err, said };
}

onEmbedded('one process per embedded DATA_DIR', () => {
  let database: SuiteDatabase;
  const started: Running[] = [];
  const start = async (env: Record<string, string> = {}) => {
    const server = await startServer({ ...database.env, ...env });
    started.push(server);
    return server;
  };

  beforeAll(async () => {
    database = await suiteDatabase();
  });
  afterAll(async () => {
    for (const server of started) server.child.kill('SIGKILL');
    await database.drop();
  });

  it('refuses a second server at once, keeps the first working, and makes a command wait for it to stop', async () => {
    const dir = database.env.DATA_DIR;
    const first = await start();
    await first.waitFor(listening, 90_000);
    const pid = first.child.pid!;
    expect((await readFile(join(dir, '.lock'), 'utf8')).trim()).toBe(String(pid));

    const second = await start();
    expect(await second.exited).toBe(1);
    expect(second.stderr()).toBe(`${inUse(dir, pid)}\n`);
    expect(await status(first.port, '/health/ready')).toBe(200);

    // A command gives up after DATA_DIR_WAIT_SECONDS with the same reason.
    const refused = purge({ ...database.env, DATA_DIR_WAIT_SECONDS: '1' });
    expect(await refused.code).toBe(1);
    expect(refused.stderr()).toContain(`waiting up to 1 s for it to stop`);
    expect(refused.stderr()).toContain(`error: ${inUse(dir, pid)}\n`);
    expect(await status(first.port, '/health/ready')).toBe(200);

    // One that is still waiting when the server stops goes on.
    const waiting = purge({ ...database.env, DATA_DIR_WAIT_SECONDS: '120' });
    await waiting.said(`DATA_DIR ${dir} is in use by process ${pid}; waiting up to 120 s for it to stop`);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(await waiting.code).toBe(0);
    expect(waiting.stdout()).toMatch(/^sessions\s+0$/m);
    expect(waiting.stderr()).not.toContain('error:');
    // Each released the folder as it stopped.
    await expect(readFile(join(dir, '.lock'), 'utf8')).rejects.toThrow(/ENOENT/);
  }, 240_000);

  it('refuses a second `make run` at once, before it builds anything', async () => {
    const dir = database.env.DATA_DIR;
    const first = await start();
    await first.waitFor(listening, 90_000);
    // NPM is a command that only records that it ran: a build or a start would show in the file.
    const ran = join(dir, 'npm-ran');
    const make = spawn('make', ['--no-print-directory', 'run', `NPM=sh -c 'echo "$$*" >> ${ran}' npm`], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, DATA_DIR: dir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    make.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const code = await new Promise<number | null>((resolve) => make.once('close', resolve));
    expect(code).not.toBe(0);
    expect(stderr.split('\n')[0]).toBe(inUse(dir, first.child.pid!));
    await expect(readFile(ran, 'utf8')).rejects.toThrow(/ENOENT/);
    expect(await status(first.port, '/health/ready')).toBe(200);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
  }, 180_000);

  it('takes over a lock left by a process that is gone', async () => {
    const dir = database.env.DATA_DIR;
    const gone = spawn(process.execPath, ['-e', '']);
    const deadPid = gone.pid!;
    await new Promise((resolve) => gone.once('exit', resolve));
    await writeFile(join(dir, '.lock'), `${deadPid}\n`);

    const server = await start();
    await server.waitFor(listening, 90_000);
    expect((await readFile(join(dir, '.lock'), 'utf8')).trim()).toBe(String(server.child.pid));
    expect(await status(server.port, '/health/ready')).toBe(200);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }, 180_000);
});
