import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { TEST_SECRET } from './app.js';
import { freePort } from './net.js';

// The real server process, started from the sources, as a deployment starts it.

const ROOT = join(import.meta.dirname, '..', '..');

export interface Running {
  child: ChildProcess;
  port: number;
  /** Every JSON log line so far. */
  lines: Array<Record<string, any>>;
  /** Resolves with the first log line (so far or to come) that matches. */
  waitFor(match: (line: Record<string, any>) => boolean, timeoutMs?: number): Promise<Record<string, any>>;
  exited: Promise<number | null>;
  /** What the process wrote to stderr so far. */
  stderr(): string;
}

/** Starts src/server.ts in a process of its own, on a free port, with the suite's settings and `env` over them. */
export async function startServer(env: Record<string, string>): Promise<Running> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', './test/support/ts-register.mjs', 'src/server.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'test',
      HOST: '127.0.0.1',
      PORT: String(port),
      SECRET_KEY: TEST_SECRET,
      BCRYPT_COST: '4',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      RATE_LIMIT_ENABLED: 'false',
      HOUSEKEEPING_INTERVAL_SECONDS: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Array<Record<string, any>> = [];
  const waiters: Array<{ match: (line: Record<string, any>) => boolean; resolve: (line: Record<string, any>) => void }> = [];
  let buffer = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    let newline: number;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const text = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      let line: Record<string, any>;
      try {
        line = JSON.parse(text);
      } catch {
        continue;
      }
      lines.push(line);
      for (const waiter of [...waiters]) {
        if (waiter.match(line)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(line);
        }
      }
    }
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const waitFor = (match: (line: Record<string, any>) => boolean, timeoutMs = 30_000) => {
    const seen = lines.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise<Record<string, any>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no such log line within ${timeoutMs} ms; stderr: ${stderr}`)), timeoutMs);
      waiters.push({ match, resolve: (line) => (clearTimeout(timer), resolve(line)) });
      void exited.then((code) => reject(new Error(`server exited with ${code} first; stderr: ${stderr}`)));
    });
  };
  return { child, port, lines, waitFor, exited, stderr: () => stderr };
}
