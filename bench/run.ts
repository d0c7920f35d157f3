/**
 * `make bench`: the service against the baseline in bench/baseline.ts, side by side in one run, on
 * PostgreSQL (BENCH_DATABASE_URL, recreated; by default account_bench on the local server).
 *
 * Routes: GET /api/auth/me (with an access token, and with an API key) and GET /api/users (page 1 of
 * 20) at 32 connections, one process each and then two (WEB_CONCURRENCY=2 against two baseline
 * workers), and with one process against the baseline again with its queries prepared. The servers of
 * one comparison take turns, BENCH_ROUNDS times (5) in one run, in a rotating order; each row reports
 * the median ratio with its spread. Then the same two routes on the embedded database; JSON login against the bcrypt ceiling
 * measured in the same run, and with PASSWORD_HASH_ALGORITHM=argon2id at its default parameters
 * against the argon2id ceiling, then again with /health/live probed meanwhile; a login overload past
 * PASSWORD_HASH_QUEUE_MAX; embedded start, cold and warm. Writes bench/results/<time>.json.
 *
 * BENCH_SECONDS sets the length of each measured run (5 by default; a comparison's runs add up to
 * rounds × servers × seconds).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { verify as argon2Verify, hash as argon2Hash } from '@node-rs/argon2';
import { hash, verify } from '@node-rs/bcrypt';
import { Client } from 'pg';
import { freePort, freshDatabase, load, login, probe, ROOT, SECRET_KEY, startProcess, table, type Figures, type Proc } from './lib';

const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/account_bench';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONNECTIONS = 32;
/** Logins take longer to reach their steady state than reads: the hashing pool fills first. */
const LOGIN_SECONDS = 15;
const ME = '/api/auth/me';
const USERS_PAGE = '/api/users?page=1&per_page=20';
const PREPARED_NOTE = 'against the baseline with prepared statements';
const USERS = 1000;
const PASSWORD = 'bench-password-1';
const COST = 12;

interface Row {
  route: string;
  processes: number;
  service: Figures;
  baseline?: Figures;
  /** Service throughput over the baseline's (or over the bcrypt ceiling, for login): the median over the rounds. */
  ratio?: number;
  /** Every round's ratio, lowest first, when the servers took turns. */
  ratios?: number[];
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
  // One client address sends everything here: the per-IP limits, and its share of the password-hashing
  // queue, would refuse most of it. The queue's overall bound stays as configured.
  RATE_LIMIT_ENABLED: 'false',
  PASSWORD_HASH_CALLER_MAX: '100000',
  // Tokens name their issuer, by default the service's own URL, which has another port each start.
  JWT_ISSUER: 'http://bench.invalid',
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

interface Contender {
  label: string;
  url: string;
  headers: Record<string, string>;
  pid?: number;
}

/**
 * Loads each contender in turn, ROUNDS times, starting each round one further along, so that a slow
 * spell of a shared machine falls on all of them alike. Returns each contender's figures per round.
 */
async function takeTurns(contenders: Contender[]): Promise<Figures[][]> {
  const options = (c: Contender) => ({ connections: CONNECTIONS, seconds: SECONDS, headers: c.headers, url: c.url });
  // A short warm-up of each, so the JIT and the pools are in their steady state.
  for (const c of contenders) await load({ ...options(c), seconds: 2 });
  const figures: Figures[][] = contenders.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < contenders.length; i++) {
      const at = (round + i) % contenders.length;
      figures[at].push(await load(options(contenders[at]), contenders[at].pid));
    }
  }
  return figures;
}

/** The row of `ours` against `theirs`, run by run: the median ratio, the round it came from, and the spread. */
function against(route: string, processes: number, ours: Figures[], theirs: Figures[], notes?: string): Row {
  const rounds = ours.map((figures, i) => ({ service: figures, baseline: theirs[i], ratio: figures.rps / theirs[i].rps }));
  rounds.sort((a, b) => a.ratio - b.ratio);
  const median = rounds[Math.floor(rounds.length / 2)];
  return { route, processes, ...median, ratios: rounds.map((r) => r.ratio), notes };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** The median of the round-by-round ratios of `ours` to `theirs`. */
function medianRatio(ours: Figures[], theirs: Figures[]): number {
  const ratios = ours.map((figures, i) => figures.rps / theirs[i].rps).sort((a, b) => a - b);
  return ratios[Math.floor(ratios.length / 2)];
}

const percent = (ratio: number) => `${(ratio * 100).toFixed(0)} %`;

const on = (proc: Proc, label: string, path: string, token: string): Contender => ({
  label,
  url: proc.url + path,
  headers: bearer(token),
  pid: proc.child.pid,
});

/**
 * One read route with one process: the service against the baseline, the baseline with prepared
 * statements and the same service on the embedded database, all in the same rounds (and `more`
 * with them). Returns the rows, the service's figures and those of `more`.
 */
async function readRows(
  route: string,
  path: string,
  token: string,
  embeddedToken: string,
  servers: { service: Proc; baseline: Proc; prepared: Proc; embedded: Proc },
  more: Contender[] = [],
): Promise<{ rows: Row[]; ours: Figures[]; others: Figures[][] }> {
  const [ours, base, preparedBase, embedded, ...others] = await takeTurns([
    on(servers.service, 'service', path, token),
    on(servers.baseline, 'baseline', path, token),
    on(servers.prepared, 'prepared baseline', path, token),
    on(servers.embedded, 'embedded', path, embeddedToken),
    ...more,
  ]);
  const rows = [
    against(route, 1, ours, base),
    against(route, 1, ours, preparedBase, PREPARED_NOTE),
    embeddedRow(`${route}, embedded database`, embedded, base, ours),
  ];
  return { rows, ours, others };
}

/** The embedded database's row: against the baseline, with its ratio to the same service on PostgreSQL in the notes. */
const embeddedRow = (route: string, embedded: Figures[], baseline: Figures[], onPostgres: Figures[]): Row =>
  against(route, 1, embedded, baseline, `${percent(medianRatio(embedded, onPostgres))} of the service on PostgreSQL`);

/** A new API key of the user whose access token is given. */
async function createApiKey(url: string, token: string): Promise<string> {
  const res = await fetch(`${url}/api/auth/api-keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...bearer(token) },
    body: JSON.stringify({ name: 'bench', read_only: true }),
  });
  if (res.status !== 201) throw new Error(`creating an API key: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { data: { key: string } }).data.key;
}

/**
 * The service on the embedded database, with the same 1,000 users: imported from a JSON-lines file
 * with `import-users` (the embedded database serves one process, so before the server starts), with
 * the same cost-12 hash.
 */
async function startEmbedded(): Promise<{ proc: Proc; adminToken: string; userToken: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'account-bench-embedded-'));
  const passwordHash = await hash(PASSWORD, COST);
  const lines = Array.from({ length: USERS }, (_, i) =>
    JSON.stringify({
      email: `bench${i + 1}@example.com`,
      name: `Bench User ${i + 1}`,
      password_hash: passwordHash,
      role: i === 0 ? 'admin' : 'user',
      email_verified: true,
    }),
  );
  const file = join(dir, 'users.jsonl');
  writeFileSync(file, `${lines.join('\n')}\n`);
  const env = { ...serviceEnv(1), DATABASE_URL: '', DATA_DIR: join(dir, 'data') };
  await promisify(execFile)(process.execPath, ['dist/src/cli/index.js', 'import-users', file], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
  });
  const proc = await startProcess(['dist/src/server.js'], env, await freePort(), '/health/ready');
  return {
    proc,
    adminToken: await login(proc.url, 'bench1@example.com', PASSWORD),
    userToken: await login(proc.url, 'bench2@example.com', PASSWORD),
    async stop() {
      await proc.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
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
    if (workers === 1) {
      // The service prepares its token check; the same routes against a baseline that prepares all of
      // its queries show what is left once neither side parses and plans per call. The embedded
      // database's service takes its turns in the same rounds.
      const prepared = await startBaseline(1, true);
      const embedded = await startEmbedded();
      const servers = { service, baseline, prepared, embedded: embedded.proc };
      const keyed = on(service, 'service, API key', ME, await createApiKey(service.url, userToken));
      const me = await readRows('GET /api/auth/me', ME, userToken, embedded.userToken, servers, [keyed]);
      rows.push(...me.rows);
      rows.push(
        against(
          'GET /api/auth/me with an API key',
          1,
          me.others[0],
          me.ours,
          'against the same route with an access token (baseline columns)',
        ),
      );
      rows.push(...(await readRows('GET /api/users (page 1 of 20)', USERS_PAGE, adminToken, embedded.adminToken, servers)).rows);
      await embedded.stop();
      await prepared.stop();
    } else {
      const me = await takeTurns([on(service, 'service', ME, userToken), on(baseline, 'baseline', ME, userToken)]);
      rows.push(against('GET /api/auth/me', workers, me[0], me[1]));
      const users = await takeTurns([on(service, 'service', USERS_PAGE, adminToken), on(baseline, 'baseline', USERS_PAGE, adminToken)]);
      rows.push(against('GET /api/users (page 1 of 20)', workers, users[0], users[1]));
    }
    if (workers === 1) {
      // A fresh process for the login scenario, so that the collection of garbage from the runs above
      // does not land in it.
      await service.stop();
      service = await startService(1);
      const ceiling = await bcryptCeiling(5);
      const body = JSON.stringify({ email: 'bench3@example.com', password: PASSWORD });
      const loginOptions = { method: 'POST' as const, body, connections: 8, seconds: LOGIN_SECONDS };
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
        row.ratio === undefined
          ? ''
          : `${percent(row.ratio)}${row.ratios ? ` (${percent(row.ratios[0])}–${percent(row.ratios[row.ratios.length - 1])})` : ''}`,
        row.notes ?? '',
      ]),
    ),
  );
  console.log(`\nembedded start: cold ${start.coldMs} ms, warm ${start.warmMs} ms (spawn to /health/ready 200)`);

  const results = {
    date: new Date().toISOString(),
    machine: { cores: availableParallelism(), node: process.version },
    settings: { connections: CONNECTIONS, seconds: SECONDS, rounds: ROUNDS, loginSeconds: LOGIN_SECONDS, users: USERS, bcryptCost: COST },
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
