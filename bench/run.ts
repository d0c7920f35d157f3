/**
 * `make bench`: the service against the baseline in bench/baseline.ts, side by side in one run, on
 * PostgreSQL (BENCH_DATABASE_URL, recreated; by default account_bench on the local server).
 *
 * Routes: GET /api/auth/me and GET /api/users (page 1 of 20) at 32 connections, one process each and
 * then two (WEB_CONCURRENCY=2 against two baseline workers), and with one process against the baseline
 * again with its queries prepared; JSON login against the bcrypt ceiling
 * measured in the same run, and with PASSWORD_HASH_ALGORITHM=argon2id at its default parameters
 * against the argon2id ceiling, then again with /health/live probed meanwhile; a login overload past
 * PASSWORD_HASH_QUEUE_MAX; embedded start, cold and warm. Writes bench/results/<time>.json.
 *
 * BENCH_SECONDS sets the length of each measured run (10 by default).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { verify as argon2Verify, hash as argon2Hash } from '@node-rs/argon2';
import { hash, verify } from '@node-rs/bcrypt';
import { Client } from 'pg';
import { freePort, freshDatabase, load, login, probe, ROOT, SECRET_KEY, startProcess, table, type Figures, type Proc } from './lib';

const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/account_bench';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = 32;
const USERS = 1000;
const PASSWORD = 'bench-password-1';
const COST = 12;

interface Row {
  route: string;
  processes: number;
  service: Figures;
  baseline?: Figures;
  /** Service throughput over the baseline's (or over the bcrypt ceiling, for login). */
  ratio?: number;
  target?: string;
  notes?: string;
}

const serviceEnv = (workers: number, extra: Record<string, string> = {}): Record<string, string> => ({
  NODE_ENV: 'production',
  DATABASE_URL,
  SECRET_KEY,
  BCRYPT_COST: String(COST),
  LOG_LEVEL: 'info',
  LOG_FORMAT: 'json',
  // One client address sends everything here: the per-IP limits would refuse most of it.
  RATE_LIMIT_ENABLED: 'false',
  WEB_CONCURRENCY: String(workers),
  // No mail server here: production needs this to start without one (mail goes to the log).
  MAIL_LOG_LINKS: 'true',
  ...extra,
});

async function startService(workers: number, extra: Record<string, string> = {}): Promise<Proc> {
  return startProcess(['dist/src/server.js'], serviceEnv(workers, extra), await freePort(), '/health/ready');
}

async function startBaseline(workers: number, prepared = false): Promise<Proc> {
  const env = { DATABASE_URL, SECRET_KEY, WORKERS: String(workers), PREPARED: prepared ? '1' : '0' };
  return startProcess(['-r', './test/support/ts-register.js', 'bench/baseline.ts'], env, await freePort());
}

/** 1,000 users (one admin) with real cost-12 hashes, loaded with SQL. */
async function seed(): Promise<void> {
  const passwordHash = await hash(PASSWORD, COST);
  const client = new Client({ connectionString: DATABASE_URL });
  await client.connect();
  await client.query(
    `insert into users (email, name, password_hash, role, email_verified, created_at, updated_at)
     select 'bench' || g || '@example.com', 'Bench User ' || g, $1, case when g = 1 then 'admin' else 'user' end, true,
            now() - g * interval '1 minute', now() - g * interval '1 minute'
     from generate_series(1, $2::int) g`,
    [passwordHash, USERS],
  );
  await client.query('analyze users');
  await client.end();
}

/** Verifications per second with every core busy: the most logins any server could do. */
async function bcryptCeiling(seconds: number): Promise<number> {
  const stored = await hash(PASSWORD, COST);
  return verifyCeiling(seconds, () => verify(PASSWORD, stored));
}

/** The same ceiling for argon2id at the service's default parameters (ARGON2_MEMORY_KIB 19456, ARGON2_ITERATIONS 2). */
async function argon2Ceiling(seconds: number): Promise<number> {
  const stored = await argon2Hash(PASSWORD, { memoryCost: 19_456, timeCost: 2, parallelism: 1 });
  return verifyCeiling(seconds, () => argon2Verify(stored, PASSWORD));
}

/** Checks per second with one check running per core: cores ÷ the time of one check. */
async function verifyCeiling(seconds: number, check: () => Promise<boolean>): Promise<number> {
  const until = Date.now() + seconds * 1000;
  let done = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: availableParallelism() }, async () => {
      while (Date.now() < until) {
        await check();
        done++;
      }
    }),
  );
  return done / ((performance.now() - started) / 1000);
}

async function compare(route: string, path: string, token: string, workers: number, service: Proc, baseline: Proc): Promise<Row> {
  const options = { connections: CONNECTIONS, seconds: SECONDS, headers: { authorization: `Bearer ${token}` } };
  // A short warm-up of each, so the JIT and the pools are in their steady state.
  await load({ ...options, seconds: 2, url: baseline.url + path });
  await load({ ...options, seconds: 2, url: service.url + path });
  const base = await load({ ...options, url: baseline.url + path }, baseline.child.pid);
  const ours = await load({ ...options, url: service.url + path }, service.child.pid);
  return { route, processes: workers, service: ours, baseline: base, ratio: ours.rps / base.rps };
}

async function embeddedStart(): Promise<{ coldMs: number; warmMs: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'account-bench-'));
  const env = { SECRET_KEY, DATA_DIR: dir, LOG_LEVEL: 'warn', RATE_LIMIT_ENABLED: 'false' };
  try {
    const timed = async () => {
      const started = performance.now();
      const proc = await startProcess(['dist/src/server.js'], env, await freePort(), '/health/ready');
      const ms = performance.now() - started;
      await proc.stop();
      return Math.round(ms);
    };
    const coldMs = await timed();
    const warmMs = await timed();
    return { coldMs, warmMs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  await freshDatabase(DATABASE_URL);
  const rows: Row[] = [];

  // The service creates the schema on its first start; the users go in after.
  let service = await startService(1);
  await seed();
  const adminToken = await login(service.url, 'bench1@example.com', PASSWORD);
  const userToken = await login(service.url, 'bench2@example.com', PASSWORD);

  for (const workers of [1, 2]) {
    if (workers > 1) service = await startService(workers);
    const baseline = await startBaseline(workers);
    rows.push(await compare('GET /api/auth/me', '/api/auth/me', userToken, workers, service, baseline));
    rows.push(await compare('GET /api/users (page 1 of 20)', '/api/users?page=1&per_page=20', adminToken, workers, service, baseline));
    if (workers === 1) {
      // The service prepares its token check; the same routes against a baseline that prepares all of
      // its queries show what is left once neither side parses and plans per call.
      const prepared = await startBaseline(1, true);
      const note = { notes: 'against the baseline with prepared statements' };
      rows.push({ ...(await compare('GET /api/auth/me', '/api/auth/me', userToken, 1, service, prepared)), ...note });
      rows.push({
        ...(await compare('GET /api/users (page 1 of 20)', '/api/users?page=1&per_page=20', adminToken, 1, service, prepared)),
        ...note,
      });
      await prepared.stop();
      // A fresh process for the login scenario, so that the collection of garbage from the runs above
      // does not land in it.
      await service.stop();
      service = await startService(1);
      const ceiling = await bcryptCeiling(5);
      const body = JSON.stringify({ email: 'bench3@example.com', password: PASSWORD });
      const loginOptions = { method: 'POST' as const, body, connections: 8, seconds: SECONDS + 5 };
      const base = await load({ ...loginOptions, url: baseline.url + '/api/auth/login/json' }, baseline.child.pid);
      const ours = await load({ ...loginOptions, url: service.url + '/api/auth/login/json' }, service.child.pid);
      rows.push({
        route: 'POST /api/auth/login/json (8 connections)',
        processes: 1,
        service: ours,
        baseline: base,
        ratio: ours.rps / ceiling,
        notes: `bcrypt ceiling ${ceiling.toFixed(2)}/s`,
      });
      // Then the same logins again, keeping the hashing pool saturated while a prober, in a process of its
      // own, measures how long the event loop takes to answer. (The prober takes CPU time from the
      // hashes, so the login rate is measured above, without it.)
      const [during, live] = await Promise.all([
        load({ ...loginOptions, url: service.url + '/api/auth/login/json' }, service.child.pid),
        // Once the logins have filled the pool (two seconds in), for as long as they keep it full.
        new Promise((resolve) => setTimeout(resolve, 2000)).then(() =>
          probe({ url: service.url + '/health/live', connections: 2, seconds: SECONDS, rate: 100 }),
        ),
      ]);
      rows.push({
        route: 'GET /health/live during logins',
        processes: 1,
        service: live,
        notes: `p99 target < 20 ms; ${during.rps.toFixed(1)} logins/s meanwhile`,
      });
      // Login with argon2id at its default parameters, against its own ceiling. The first login of the
      // user re-hashes its bcrypt hash to argon2id; the measured ones then verify argon2id.
      await service.stop();
      service = await startService(1, { PASSWORD_HASH_ALGORITHM: 'argon2id' });
      const argon2Body = JSON.stringify({ email: 'bench4@example.com', password: PASSWORD });
      await login(service.url, 'bench4@example.com', PASSWORD);
      const argon2 = await argon2Ceiling(5);
      const argon2Logins = await load({ ...loginOptions, body: argon2Body, url: service.url + '/api/auth/login/json' }, service.child.pid);
      rows.push({
        route: 'POST /api/auth/login/json, argon2id (8 connections)',
        processes: 1,
        service: argon2Logins,
        ratio: argon2Logins.rps / argon2,
        notes: `argon2id ceiling ${argon2.toFixed(2)}/s (m=19456 KiB, t=2, p=1)`,
      });
      await service.stop();
      service = await startService(1);
      // More logins than the queue holds: the excess is refused at once instead of waiting.
      const overload = await load(
        { ...loginOptions, connections: 64, seconds: 5, url: service.url + '/api/auth/login/json' },
        service.child.pid,
      );
      rows.push({
        route: 'POST /api/auth/login/json (64 connections)',
        processes: 1,
        service: overload,
        notes: `${overload.statuses['2xx']} ok, ${overload.statuses['5xx']} refused with 503`,
      });
    }
    await baseline.stop();
    await service.stop();
  }

  const start = await embeddedStart();

  const fmt = (n: number | undefined, digits = 0) => (n === undefined ? '' : n.toFixed(digits));
  console.log(
    table(
      ['route', 'proc', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'RSS MB (peak)', 'baseline req/s', 'base p99', 'base RSS', 'ratio', 'notes'],
      rows.map((row) => [
        row.route,
        row.processes,
        fmt(row.service.rps, 1),
        row.service.p50,
        row.service.p99,
        row.service.errors,
        row.service.rssMb ? `${row.service.rssMb} (${row.service.rssPeakMb})` : '',
        fmt(row.baseline?.rps, 1),
        row.baseline?.p99 ?? '',
        row.baseline?.rssMb || '',
        row.ratio === undefined ? '' : `${(row.ratio * 100).toFixed(0)} %`,
        row.notes ?? '',
      ]),
    ),
  );
  console.log(`\nembedded start: cold ${start.coldMs} ms, warm ${start.warmMs} ms (spawn to /health/ready 200)`);

  const results = {
    date: new Date().toISOString(),
    machine: { cores: availableParallelism(), node: process.version },
    settings: { connections: CONNECTIONS, seconds: SECONDS, users: USERS, bcryptCost: COST },
    rows,
    embeddedStart: start,
  };
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  const file = join(ROOT, 'bench/results', `${results.date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`figures written to ${file}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
