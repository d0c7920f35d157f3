/** What the benchmark scripts share: processes, databases, load and the figures they report. */
import { createRequire } from 'node:module';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { Client } from 'pg';

const require = createRequire(import.meta.url);

export { freePort } from '../test/support/net.js';

export const ROOT = join(import.meta.dirname, '..');
export const SECRET_KEY = 'bench-secret-key-that-is-long-enough-for-hs256';

/** Drops and creates the database named in `url`, through the server's `postgres` database. */
export async function freshDatabase(url: string): Promise<void> {
  const name = new URL(url).pathname.slice(1);
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`unexpected database name "${name}"`);
  const server = new URL(url);
  server.pathname = '/postgres';
  const client = new Client({ connectionString: server.toString() });
  await client.connect();
  await client.query(`drop database if exists ${name} with (force)`);
  await client.query(`create database ${name}`);
  await client.end();
}

/** Logs in with JSON and returns the access token. */
export async function login(url: string, email: string, password: string): Promise<string> {
  const res = await fetch(`${url}/api/auth/login/json`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  if (res.status !== 200) throw new Error(`login as ${email}: ${res.status}`);
  return ((await res.json()) as { data: { access_token: string } }).data.access_token;
}

export interface Proc {
  child: ChildProcess;
  url: string;
  stop(): Promise<void>;
}

/** Starts a server process and waits until `readyPath` answers 200. */
export async function startProcess(args: string[], env: Record<string, string>, port: number, readyPath = '/health/live'): Promise<Proc> {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited with ${child.exitCode}`);
    try {
      if ((await fetch(url + readyPath)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${args.join(' ')} did not become ready`);
    // Often, so that start times are measured to within about 10 ms.
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return {
    child,
    url,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The resident set of a process and its children (cluster workers), in MB. */
export function rssMb(pid: number): number {
  const pids = [pid, ...childrenOf(pid)];
  let kb = 0;
  for (const p of pids) {
    try {
      const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      if (match) kb += Number(match[1]);
    } catch {
      // gone
    }
  }
  return kb / 1024;
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  seconds: number;
  /** Requests per second over all connections; unlimited when absent. */
  rate?: number;
}

export interface Figures {
  rps: number;
  p50: number;
  p99: number;
  /** Responses other than 2xx, plus connection errors and timeouts. */
  errors: number;
  /** Count per status class, e.g. { '2xx': 1000, '5xx': 3 }. */
  statuses: Record<string, number>;
  /** Resident set at the end of the run, MB (0 when not sampled). */
  rssMb: number;
  /** Highest resident set seen during the run, MB: start-up garbage not yet collected shows here. */
  rssPeakMb: number;
}

/** Samples the resident set of `pid` (when given) every 200 ms until stopped: the last and the highest, MB. */
function sampleRss(pid?: number): { figures(): { rssMb: number; rssPeakMb: number }; stop(): void } {
  let peak = 0;
  let last = 0;
  const sampler = pid
    ? setInterval(() => {
        last = rssMb(pid);
        peak = Math.max(peak, last);
      }, 200)
    : undefined;
  return {
    figures: () => ({ rssMb: Math.round(last), rssPeakMb: Math.round(peak) }),
    stop: () => clearInterval(sampler),
  };
}

/** Runs autocannon against one URL, sampling the RSS of `pid` meanwhile. */
export async function load(options: LoadOptions, pid?: number): Promise<Figures> {
  const rss = sampleRss(pid);
  try {
    const result = await autocannon({
      url: options.url,
      method: options.method ?? 'GET',
      headers: { 'content-type': 'application/json', ...options.headers },
      body: options.body,
      connections: options.connections,
      duration: options.seconds,
      overallRate: options.rate,
    });
    return {
      rps: result.requests.average,
      p50: result.latency.p50,
      p99: result.latency.p99,
      errors: result.non2xx + result.errors + result.timeouts,
      statuses: { '1xx': result['1xx'], '2xx': result['2xx'], '3xx': result['3xx'], '4xx': result['4xx'], '5xx': result['5xx'] },
      ...rss.figures(),
    };
  } finally {
    rss.stop();
  }
}

/**
 * Runs autocannon with a body made for each request by `next` (undefined when nothing is left), and
 * `answered` told each response's status and body. With `amount`, the run ends after that many requests
 * instead of after `seconds`; the rate is then the requests over the time they took.
 */
export async function loadEach(
  options: Omit<LoadOptions, 'body'> & { amount?: number; next(): string | undefined; answered?(status: number, body: string): void },
  pid?: number,
): Promise<Figures> {
  const rss = sampleRss(pid);
  try {
    // autocannon's own duration is in whole seconds: too coarse for a turn of a few seconds.
    const started = performance.now();
    const result = await autocannon({
      url: options.url,
      method: options.method ?? 'POST',
      headers: options.headers,
      connections: options.connections,
      duration: options.seconds,
      amount: options.amount,
      // autocannon ends a run at its next sample, by default a second after the last answer at worst:
      // a turn of a number of requests would be timed in whole seconds.
      sampleInt: 10,
      requests: [
        {
          setupRequest: (request) => {
            const body = options.next();
            return body === undefined ? (undefined as never) : { ...request, body };
          },
          onResponse: options.answered ? (status: number, body: string) => options.answered!(status, body) : undefined,
        },
      ],
    });
    const total = result['1xx'] + result['2xx'] + result['3xx'] + result['4xx'] + result['5xx'];
    return {
      rps: total / ((performance.now() - started) / 1000),
      p50: result.latency.p50,
      p99: result.latency.p99,
      errors: result.non2xx + result.errors + result.timeouts,
      statuses: { '2xx': result['2xx'], '3xx': result['3xx'], '4xx': result['4xx'], '5xx': result['5xx'] },
      ...rss.figures(),
    };
  } finally {
    rss.stop();
  }
}

/**
 * Runs autocannon in a process of its own: a latency probe that must not share an event loop with the
 * load it measures under.
 */
export function probe(options: LoadOptions): Promise<Figures> {
  const args = [require.resolve('autocannon/autocannon.js'), '-j', '-c', String(options.connections), '-d', String(options.seconds)];
  if (options.rate) args.push('-R', String(options.rate));
  for (const [name, value] of Object.entries(options.headers ?? {})) args.push('-H', `${name}=${value}`);
  args.push(options.url);
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { maxBuffer: 16 * 1024 * 1024 }, (error, stdout) => {
      if (error) return reject(new Error(`autocannon failed: ${error.message}`, { cause: error }));
      const result = JSON.parse(stdout);
      resolve({
        rps: result.requests.average,
        p50: result.latency.p50,
        p99: result.latency.p99,
        errors: result.non2xx + result.errors + result.timeouts,
        statuses: { '2xx': result['2xx'], '4xx': result['4xx'], '5xx': result['5xx'] },
        rssMb: 0,
        rssPeakMb: 0,
      });
    });
  });
}

/**
 * Median and 95th percentile of `runs` sequential calls of `fn`, in ms. With `perSecond`, the calls
 * start at that fixed rate (a call that overruns its slot delays the next one, never two at once).
 */
export async function timeSequential(
  fn: () => Promise<unknown>,
  runs: number,
  perSecond?: number,
): Promise<{ p50: number; p95: number; p99: number }> {
  const times: number[] = [];
  const begun = performance.now();
  for (let i = 0; i < runs; i++) {
    if (perSecond) {
      const wait = begun + (i * 1000) / perSecond - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
    const started = performance.now();
    await fn();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => Number(times[Math.min(times.length - 1, Math.floor(q * times.length))].toFixed(2));
  return { p50: at(0.5), p95: at(0.95), p99: at(0.99) };
}

/** Prints rows as an aligned text table. */
export function table(header: string[], rows: Array<Array<string | number>>): string {
  const cells = [header, ...rows.map((row) => row.map(String))];
  const widths = header.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  const line = (row: string[]) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');
  return [line(cells[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}
