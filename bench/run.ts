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
 * The OpenID Connect provider's rows, against the same baseline's minimal OAuth endpoints: the token
 * endpoint exchanging codes (each request a fresh code, made beforehand by a browser signed in through
 * the hosted page) and rotating refresh tokens (a pool of grants, each refreshed in turn), and
 * /oauth2/userinfo; the refreshes and /oauth2/userinfo, /oauth2/introspect and the client credentials
 * grant against oidc-provider alone on its in-memory store too (bench/bare-provider.ts), the provider's
 * ceiling; then whole logins through the hosted page (authorize, the sign-in form, the code's exchange)
 * against the bcrypt ceiling, and /oauth2/userinfo probed meanwhile.
 *
 * BENCH_SECONDS sets the length of each measured run (5 by default; a comparison's runs add up to
 * rounds × servers × seconds). BENCH_ONLY=oidc runs only the OpenID Connect rows.
 */
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { verify as argon2Verify, hash as argon2Hash } from '@node-rs/argon2';
import { hash, verify } from '@node-rs/bcrypt';
import { Client } from 'pg';
import { deriveKey, seal } from '../src/infra/sealed.js';
import { FormBrowser, formTo } from '../test/support/hosted-pages.js';
import {
  freePort,
  freshDatabase,
  load,
  loadEach,
  login,
  probe,
  ROOT,
  SECRET_KEY,
  startProcess,
  table,
  timeSequential,
  type Figures,
  type Proc,
} from './lib.js';

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
const ONLY = process.env.BENCH_ONLY;
if (ONLY !== undefined && ONLY !== 'oidc' && ONLY !== 'organizations') {
  throw new Error(`BENCH_ONLY=${ONLY}: the parts that run alone are oidc and organizations`);
}

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

/**
 * The service for the provider's rows. Its issuer is its own address: the provider writes the addresses
 * it sends a browser to (the authorization's resumption after the sign-in page) at the issuer, and the
 * bench's browsers follow only the service's.
 */
async function startProvider(extra: Record<string, string>): Promise<Proc> {
  const port = await freePort();
  return startProcess(['dist/src/server.js'], serviceEnv(1, { ...extra, JWT_ISSUER: `http://127.0.0.1:${port}` }), port, '/health/ready');
}

async function startBaseline(workers: number, prepared = false, extra: Record<string, string> = {}): Promise<Proc> {
  const env = { DATABASE_URL, SECRET_KEY, WORKERS: String(workers), PREPARED: prepared ? '1' : '0', ...extra };
  return startProcess(['--import', './test/support/ts-register.mjs', 'bench/baseline.ts'], env, await freePort());
}

/** oidc-provider alone (bench/bare-provider.ts), with the bench's users and application and the service's signing key. */
async function startBareProvider(privateKeyPem: string): Promise<Proc> {
  const env = {
    OIDC_PRIVATE_KEY: privateKeyPem,
    CLIENT_ID: CLIENT.id,
    CLIENT_SECRET: CLIENT.secret,
    REDIRECT_URI: CLIENT.redirect,
    USERS: String(USERS),
  };
  return startProcess(['--import', './test/support/ts-register.mjs', 'bench/bare-provider.ts'], env, await freePort());
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
  method?: 'GET' | 'POST';
  body?: string;
}

/**
 * Loads each contender in turn, ROUNDS times, starting each round one further along, so that a slow
 * spell of a shared machine falls on all of them alike. Returns each contender's figures per round.
 */
async function takeTurns(contenders: Contender[], connections = CONNECTIONS): Promise<Figures[][]> {
  const options = (c: Contender) => ({ connections, seconds: SECONDS, headers: c.headers, url: c.url, method: c.method, body: c.body });
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

/** The API's routes, one and two processes, the embedded database and the logins. */
async function apiRows(rows: Row[]): Promise<void> {
  let service = await startService(1);
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
}

async function main(): Promise<void> {
  await freshDatabase(DATABASE_URL);
  const rows: Row[] = [];

  // The service creates the schema on its first start; the users go in after.
  const first = await startService(1);
  await seed();
  await first.stop();

  if (ONLY === undefined) await apiRows(rows);
  if (ONLY === undefined || ONLY === 'organizations') rows.push(...(await organizationRows()));
  if (ONLY === undefined || ONLY === 'oidc') rows.push(...(await oidcRows()));
  const start = ONLY === undefined ? await embeddedStart() : undefined;

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
  for (const [name, plan] of Object.entries(organizationPlans))
    console.log(`\n-- ${name}, ${MEMBERS.toLocaleString('en')} members\n${plan}`);
  if (start) console.log(`\nembedded start: cold ${start.coldMs} ms, warm ${start.warmMs} ms (spawn to /health/ready 200)`);

  const results = {
    date: new Date().toISOString(),
    machine: { cores: availableParallelism(), node: process.version },
    settings: {
      only: ONLY ?? null,
      connections: CONNECTIONS,
      seconds: SECONDS,
      rounds: ROUNDS,
      loginSeconds: LOGIN_SECONDS,
      users: USERS,
      bcryptCost: COST,
    },
    rows,
    embeddedStart: start,
    ...(Object.keys(organizationPlans).length ? { organizationPlans } : {}),
  };
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  const file = join(ROOT, 'bench/results', `${results.date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`figures written to ${file}`);
}

// The organisations' rows.

/** The members of the large organisation, loaded with SQL. */
const MEMBERS = 100_000;
/** The user who signs in, with and without an active organisation, and owns the small one. */
const ORG_USER = 'bench5@example.com';
/** The cost of the organisation rows' hashes: low, so that the rows measure the work around the hash. */
const ORG_COST = 4;
/** Sessions in each refresh pool: each connection refreshes one at a time. */
const SESSIONS = 64;
/** Connections for the organisation rows' logins and refreshes (under the hashing queue's bound, 16 waiting). */
const ORG_CONNECTIONS = 8;
/** Members-list requests per second, one at a time. */
const MEMBERS_RATE = 50;
const MEMBERS_RUNS = 500;

/** Where the members list's statements spend their time, at MEMBERS members: written with the figures. */
const organizationPlans: Record<string, string> = {};

/** `organizations create|add-member ...` with the built CLI against the bench database; its output. */
async function organizationsCli(...args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, ['dist/src/cli/index.js', 'organizations', ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...serviceEnv(1), LOG_LEVEL: 'warn' },
  });
  return stdout.trim();
}

/** The id in `created organization <id> (<slug>) ...`. */
function createdId(output: string): number {
  const match = /^created organization (\d+) /.exec(output);
  if (!match) throw new Error(`organizations create said: ${output}`);
  return Number(match[1]);
}

/** MEMBERS users, made members of `organizationId` with SQL, joined a second apart. */
async function seedMembers(db: Client, organizationId: number): Promise<void> {
  const passwordHash = await hash(PASSWORD, ORG_COST);
  await db.query('begin');
  // The per-row counter trigger is for the API's changes; a bulk load sets the counters once, after.
  await db.query('alter table users disable trigger users_count_rows');
  await db.query(
    `insert into users (email, name, password_hash, email_verified, created_at, updated_at)
     select 'member' || g || '@example.com', 'Member ' || g, $1, true, now(), now() from generate_series(1, $2::int) g`,
    [passwordHash, MEMBERS],
  );
  await db.query('alter table users enable trigger users_count_rows');
  await db.query(`update user_counts c set n = (select count(*) from users u where user_state(u.deleted_at, u.is_active) = c.state)`);
  // The same for the members' counter: set once, after, as the migration that made it does.
  await db.query('alter table organization_members disable trigger organization_members_count_rows');
  await db.query(
    `insert into organization_members (organization_id, user_id, role, joined_at)
     select $1, id, 'member', timestamptz '2026-01-01' + row_number() over (order by id) * interval '1 second'
     from users where email like 'member%@example.com'`,
    [organizationId],
  );
  await db.query('alter table organization_members enable trigger organization_members_count_rows');
  await db.query(
    `update organization_member_counts set n = (select count(*) from organization_members m join users u on u.id = m.user_id
       where m.organization_id = $1 and u.deleted_at is null) where organization_id = $1`,
    [organizationId],
  );
  await db.query('commit');
  await db.query('analyze users');
  await db.query('analyze organization_members');
}

/** The statements behind `GET /api/organizations/{id}/members`, first page, as the service sends them. */
const MEMBER_PLANS: Record<string, string> = {
  'members, first page': `select "organization_members"."user_id", "users"."email", "users"."name", "organization_members"."role", "organization_members"."joined_at"
    from "organization_members" inner join "users" on "users"."id" = "organization_members"."user_id"
    where "organization_members"."organization_id" = $1 and "users"."deleted_at" is null
    order by "organization_members"."joined_at", "organization_members"."user_id" limit 20 offset 0`,
  'members, total': `select "n" as "total" from "organization_member_counts" where "organization_id" = $1`,
  'members, total as a count(*), as it was before the counter': `select count(*)::int as "total"
    from "organization_members" inner join "users" on "users"."id" = "organization_members"."user_id"
    where "organization_members"."organization_id" = $1 and "users"."deleted_at" is null`,
};

/** A JSON login's tokens, acting for `organizationId` when given. */
async function loginFor(url: string, email: string, organizationId?: number): Promise<{ access_token: string; refresh_token: string }> {
  const res = await fetch(`${url}/api/auth/login/json`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: PASSWORD, ...(organizationId === undefined ? {} : { organization_id: organizationId }) }),
  });
  if (res.status !== 200) throw new Error(`login as ${email}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { data: { access_token: string; refresh_token: string } }).data;
}

/**
 * A turn of `amount` refreshes at /api/auth/refresh: each request takes a session's refresh token from
 * the pool (with `organization_id`, when given), and its answer puts the session's new one back.
 */
const apiRefreshTurn = (proc: Proc, pool: string[], amount: number, organizationId?: number) =>
  loadEach(
    {
      url: `${proc.url}/api/auth/refresh`,
      headers: { 'content-type': 'application/json' },
      connections: ORG_CONNECTIONS,
      seconds: SECONDS,
      amount,
      next: () =>
        JSON.stringify({
          refresh_token: pool.shift() ?? 'none',
          ...(organizationId === undefined ? {} : { organization_id: organizationId }),
        }),
      answered(status, body) {
        if (status === 200) pool.push((JSON.parse(body) as { data: { refresh_token: string } }).data.refresh_token);
      },
    },
    proc.child.pid,
  );

/**
 * Login and refresh with an active organisation against the same calls without one (one service, the
 * two taking turns), and the first page of the members of an organisation of MEMBERS members.
 */
async function organizationRows(): Promise<Row[]> {
  const rows: Row[] = [];
  const db = new Client({ connectionString: DATABASE_URL });
  await db.connect();
  await db.query('update users set password_hash = $1 where email = $2', [await hash(PASSWORD, ORG_COST), ORG_USER]);
  const small = createdId(await organizationsCli('create', '--name', 'Bench', '--slug', 'bench', '--owner-email', ORG_USER));
  const large = createdId(
    await organizationsCli('create', '--name', 'Bench Large', '--slug', 'bench-large', '--owner-email', 'bench1@example.com'),
  );
  await organizationsCli('add-member', '--slug', 'bench', '--email', 'bench6@example.com', '--role', 'member');
  const seeding = performance.now();
  await seedMembers(db, large);
  const seedSeconds = (performance.now() - seeding) / 1000;

  let service = await startService(1, { BCRYPT_COST: String(ORG_COST) });
  const loginUrl = `${service.url}/api/auth/login/json`;
  const loginBody = (organizationId?: number) =>
    JSON.stringify({ email: ORG_USER, password: PASSWORD, ...(organizationId === undefined ? {} : { organization_id: organizationId }) });
  const logins = await takeTurns(
    [
      { label: 'with an organisation', url: loginUrl, method: 'POST', body: loginBody(small), headers: {}, pid: service.child.pid },
      { label: 'without', url: loginUrl, method: 'POST', body: loginBody(), headers: {}, pid: service.child.pid },
    ],
    ORG_CONNECTIONS,
  );
  rows.push(
    against(
      `POST /api/auth/login/json with organization_id (8 connections, bcrypt cost ${ORG_COST})`,
      1,
      logins[0],
      logins[1],
      `against the same login without one (baseline columns); bcrypt cost ${ORG_COST}`,
    ),
  );

  // The same at the cost every other login row uses, a fresh process: bcrypt's 200 ms hide the rest.
  await service.stop();
  const costly = await startService(1);
  const costlyUrl = `${costly.url}/api/auth/login/json`;
  const costlyBody = (organizationId?: number) =>
    JSON.stringify({
      email: 'bench6@example.com',
      password: PASSWORD,
      ...(organizationId === undefined ? {} : { organization_id: organizationId }),
    });
  const costlyLogins = await takeTurns(
    [
      { label: 'with an organisation', url: costlyUrl, method: 'POST', body: costlyBody(small), headers: {}, pid: costly.child.pid },
      { label: 'without', url: costlyUrl, method: 'POST', body: costlyBody(), headers: {}, pid: costly.child.pid },
    ],
    ORG_CONNECTIONS,
  );
  rows.push(
    against(
      'POST /api/auth/login/json with organization_id (8 connections)',
      1,
      costlyLogins[0],
      costlyLogins[1],
      `against the same login without one (baseline columns); bcrypt cost ${COST}`,
    ),
  );
  await costly.stop();
  service = await startService(1, { BCRYPT_COST: String(ORG_COST) });

  // Refreshes: a pool of sessions each, signed in with and without the organisation.
  const withPool: string[] = [];
  const withoutPool: string[] = [];
  for (let i = 0; i < SESSIONS; i++) {
    withPool.push((await loginFor(service.url, ORG_USER, small)).refresh_token);
    withoutPool.push((await loginFor(service.url, ORG_USER)).refresh_token);
  }
  const pools = [withPool, withoutPool];
  const organizationOf = [small, undefined];
  // A warm-up turn of each sizes the turns: about SECONDS of requests.
  const amounts: number[] = [];
  for (let i = 0; i < pools.length; i++) {
    amounts.push(Math.max(100, Math.round((await apiRefreshTurn(service, pools[i], 200, organizationOf[i])).rps * SECONDS)));
  }
  const refreshed: Figures[][] = [[], []];
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < pools.length; i++) {
      const at = (round + i) % pools.length;
      refreshed[at].push(await apiRefreshTurn(service, pools[at], amounts[at], organizationOf[at]));
    }
  }
  rows.push(
    against(
      `POST /api/auth/refresh with organization_id (8 connections, bcrypt cost ${ORG_COST} service)`,
      1,
      refreshed[0],
      refreshed[1],
      `against the same refresh without one (baseline columns); ${amounts[0]} and ${amounts[1]} refreshes a turn over ${SESSIONS} sessions each; ${withPool.length} and ${withoutPool.length} sessions left at the end`,
    ),
  );

  // The members list of the large organisation, first page, one request at a time at a fixed rate.
  const adminToken = await login(service.url, 'bench1@example.com', PASSWORD);
  const membersUrl = `${service.url}/api/organizations/${large}/members?page=1&per_page=20`;
  const firstPage = async () => {
    const res = await fetch(membersUrl, { headers: bearer(adminToken) });
    if (res.status !== 200) throw new Error(`the members list answered ${res.status}: ${await res.text()}`);
    return (await res.json()) as { data: unknown[]; meta: { total: number } };
  };
  const page = await firstPage();
  if (page.meta.total !== MEMBERS + 1 || page.data.length !== 20) {
    throw new Error(`the members list gave ${page.data.length} members of ${page.meta.total}, not 20 of ${MEMBERS + 1}`);
  }
  await timeSequential(firstPage, 50);
  const started = performance.now();
  const times = await timeSequential(firstPage, MEMBERS_RUNS, MEMBERS_RATE);
  const seconds = (performance.now() - started) / 1000;
  rows.push({
    route: `GET /api/organizations/{id}/members (page 1 of 20, ${MEMBERS.toLocaleString('en')} members)`,
    processes: 1,
    service: {
      rps: MEMBERS_RUNS / seconds,
      p50: times.p50,
      p99: times.p99,
      errors: 0,
      statuses: { '2xx': MEMBERS_RUNS },
      rssMb: 0,
      rssPeakMb: 0,
    },
    notes: `${MEMBERS_RUNS} requests one at a time at ${MEMBERS_RATE}/s; p95 ${times.p95} ms; target p50 < 10 ms; members loaded with SQL in ${seedSeconds.toFixed(1)} s`,
  });
  for (const [name, sql] of Object.entries(MEMBER_PLANS)) {
    const result = await db.query(`explain (analyze, buffers, costs off) ${sql}`, [large]);
    organizationPlans[name] = result.rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n');
  }
  await service.stop();
  await db.end();
  return rows;
}

// The OpenID Connect provider's rows.

/** The application of the OpenID Connect rows: a confidential, first-party web application. */
const CLIENT = { id: 'bench-app', secret: 'bench-client-secret-that-is-long-enough', redirect: 'http://127.0.0.1:9/callback' };
/** One PKCE verifier for every request: the server checks it against each code's challenge all the same. */
const VERIFIER = 'bench-pkce-code-verifier-of-forty-three-characters-at-least';
const CHALLENGE = createHash('sha256').update(VERIFIER).digest('base64url');
/** The users who sign in through the hosted page, one per concurrent browser. */
const BROWSERS = 8;
const browserUser = (i: number) => `bench${20 + i}@example.com`;
/** Grants in each refresh pool: each connection refreshes one at a time, and a failed refresh loses one. */
const GRANTS = 2 * CONNECTIONS;
/** The provider's codes live 60 s: a turn's codes are made at most this long before it. */
const CODE_MAKING_SECONDS = 35;

const FORM = 'application/x-www-form-urlencoded';
const clientAuth = {
  'content-type': FORM,
  authorization: `Basic ${Buffer.from(`${encodeURIComponent(CLIENT.id)}:${encodeURIComponent(CLIENT.secret)}`).toString('base64')}`,
};
const exchangeBody = (code: string) =>
  new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: CLIENT.redirect, code_verifier: VERIFIER }).toString();
const refreshBody = (token: string) => new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token }).toString();
const introspectionBody = (token: string) => new URLSearchParams({ token, token_type_hint: 'access_token' }).toString();
const BARE_NOTE = 'against the bare oidc-provider (memory)';
const OFFLINE_SCOPE = 'openid profile email offline_access';

/** An authorization request of the client; with offline_access, the consent prompt it needs for a refresh token. */
function authorizeUrl(url: string, offline = false): string {
  const params = new URLSearchParams({
    client_id: CLIENT.id,
    response_type: 'code',
    redirect_uri: CLIENT.redirect,
    scope: offline ? 'openid profile email offline_access' : 'openid profile email',
    code_challenge: CHALLENGE,
    code_challenge_method: 'S256',
    state: randomBytes(8).toString('base64url'),
    nonce: randomBytes(8).toString('base64url'),
    ...(offline ? { prompt: 'consent' } : {}),
  });
  return `${url}/oauth2/authorize?${params.toString()}`;
}

/** The code the browser was sent back to the application with. */
function codeOf(page: { status: number; url: string }): string {
  const url = new URL(page.url);
  const code = url.searchParams.get('code');
  if (page.status !== 0 || `${url.origin}${url.pathname}` !== CLIENT.redirect || !code) {
    throw new Error(`expected the application's redirect URI with a code, got ${page.status} ${page.url}`);
  }
  return code;
}

/** A whole login through the hosted page: authorize, the sign-in page, its form posted, the code exchanged. */
async function hostedLogin(url: string, email: string): Promise<{ access_token: string; refresh_token?: string }> {
  const browser = new FormBrowser(url);
  const page = await browser.open(authorizeUrl(url));
  if (page.status !== 200) throw new Error(`the sign-in page answered ${page.status}`);
  const code = codeOf(await browser.submit(formTo(page, '/login'), { email, password: PASSWORD }));
  return exchange(url, code);
}

async function exchange(url: string, code: string): Promise<{ access_token: string; refresh_token?: string }> {
  const res = await fetch(`${url}/oauth2/token`, { method: 'POST', headers: clientAuth, body: exchangeBody(code) });
  if (res.status !== 200) throw new Error(`the code's exchange answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as { access_token: string; refresh_token?: string };
}

/** Browsers signed in through the hosted page once each; later authorizations need no password. */
async function signedInBrowsers(url: string): Promise<FormBrowser[]> {
  return Promise.all(
    Array.from({ length: BROWSERS }, async (_, i) => {
      const browser = new FormBrowser(url);
      const page = await browser.open(authorizeUrl(url));
      codeOf(await browser.submit(formTo(page, '/login'), { email: browserUser(i), password: PASSWORD }));
      return browser;
    }),
  );
}

/** `count` codes from the service, the browsers asking at once; and how many a second it made. */
async function serviceCodes(
  url: string,
  browsers: FormBrowser[],
  count: number,
  offline = false,
): Promise<{ codes: string[]; perSecond: number }> {
  const codes: string[] = [];
  const started = performance.now();
  await Promise.all(
    browsers.map(async (browser) => {
      while (codes.length < count) codes.push(codeOf(await browser.open(authorizeUrl(url, offline))));
    }),
  );
  return { codes: codes.slice(0, count), perSecond: codes.length / ((performance.now() - started) / 1000) };
}

/** The baseline's tables, and its copy of the client. */
async function baselineTables(client: Client): Promise<void> {
  await client.query(`create table bench_oauth_clients (client_id text primary key, secret_sha256 bytea not null)`);
  await client.query(
    `create table bench_codes (code text primary key, client_id text not null, user_id bigint not null, code_challenge text not null,
       redirect_uri text not null, scope text not null, nonce text, expires_at timestamptz not null)`,
  );
  await client.query(
    `create table bench_refresh_tokens (token_sha256 bytea primary key, client_id text not null, user_id bigint not null,
       scope text not null, expires_at timestamptz not null)`,
  );
  await client.query('insert into bench_oauth_clients values ($1, $2)', [CLIENT.id, createHash('sha256').update(CLIENT.secret).digest()]);
}

/** `count` codes stored for the baseline, as its authorization endpoint would have stored them. */
async function baselineCodes(client: Client, userIds: number[], count: number): Promise<string[]> {
  const codes = Array.from({ length: count }, () => randomBytes(32).toString('base64url'));
  await client.query(
    `insert into bench_codes (code, client_id, user_id, code_challenge, redirect_uri, scope, nonce, expires_at)
     select code, $2, ($3::bigint[])[1 + (n - 1) % cardinality($3::bigint[])], $4, $5, 'openid profile email', 'n', now() + interval '60 seconds'
     from unnest($1::text[]) with ordinality as c(code, n)`,
    [codes, CLIENT.id, userIds, CHALLENGE, CLIENT.redirect],
  );
  return codes;
}

/** `count` refresh tokens stored for the baseline. */
async function baselineRefreshTokens(client: Client, userIds: number[], count: number): Promise<string[]> {
  const tokens = Array.from({ length: count }, () => randomBytes(32).toString('base64url'));
  await client.query(
    `insert into bench_refresh_tokens (token_sha256, client_id, user_id, scope, expires_at)
     select sha256(convert_to(token, 'UTF8')), $2, ($3::bigint[])[1 + (n - 1) % cardinality($3::bigint[])], 'openid profile email offline_access',
            now() + interval '14 days'
     from unnest($1::text[]) with ordinality as t(token, n)`,
    [tokens, CLIENT.id, userIds],
  );
  return tokens;
}

/** The service's copy of the client, its secret sealed as the provider reads it. */
async function serviceClient(client: Client): Promise<void> {
  await client.query(
    `insert into oauth_clients (client_id, name, type, client_secret_sealed, metadata, first_party, registered, created_at, updated_at)
     values ($1, 'Bench', 'confidential', $2, $3, true, false, now(), now())`,
    [
      CLIENT.id,
      seal(deriveKey(SECRET_KEY, 'oauth-client-secret'), CLIENT.secret),
      JSON.stringify({
        client_name: 'Bench',
        redirect_uris: [CLIENT.redirect],
        // client_credentials as an admin would allow it, for the row of that grant.
        grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
        response_types: ['code'],
        scope: 'openid profile email offline_access',
        token_endpoint_auth_method: 'client_secret_basic',
      }),
    ],
  );
}

/** A turn of the token endpoint: every request a code from `codes`, all of them sent. */
const codeTurn = (proc: Proc, codes: string[]) =>
  loadEach(
    {
      url: `${proc.url}/oauth2/token`,
      headers: clientAuth,
      connections: CONNECTIONS,
      seconds: SECONDS,
      amount: codes.length,
      // Past the end (never, with `amount`), a code nobody has: an error in the figures, not a stall.
      next: () => exchangeBody(codes.shift() ?? 'none'),
    },
    proc.child.pid,
  );

/**
 * A turn of `amount` refreshes: each request takes a grant's token from the pool, and its answer puts the
 * grant's new one back. (A turn cut off by time would lose the grants whose answers were still on the way.)
 */
const refreshTurn = (proc: Proc, pool: string[], amount: number) =>
  loadEach(
    {
      url: `${proc.url}/oauth2/token`,
      headers: clientAuth,
      connections: CONNECTIONS,
      seconds: SECONDS,
      amount,
      next: () => refreshBody(pool.shift() ?? 'none'),
      answered(status, body) {
        if (status === 200) pool.push((JSON.parse(body) as { refresh_token: string }).refresh_token);
      },
    },
    proc.child.pid,
  );

/** Tokens of `count` grants of the bench's application, made by the bare provider as a code's exchange would have given them. */
async function bareTokens(proc: Proc, count: number, scope: string): Promise<Array<{ access_token: string; refresh_token?: string }>> {
  const res = await fetch(`${proc.url}/bench/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ count, scope }),
  });
  if (res.status !== 200) throw new Error(`the bare provider's tokens: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { tokens: Array<{ access_token: string; refresh_token?: string }> }).tokens;
}

/** Throws unless the provider at `proc` says the access token is active: an inactive one is answered 200 all the same. */
async function expectActive(proc: Proc, token: string): Promise<void> {
  const res = await fetch(`${proc.url}/oauth2/introspect`, { method: 'POST', headers: clientAuth, body: introspectionBody(token) });
  const body = (await res.json()) as { active?: boolean };
  if (res.status !== 200 || body.active !== true) throw new Error(`introspection at ${proc.url}: ${res.status} ${JSON.stringify(body)}`);
}

/** The bench's application at the token or introspection endpoint, with `body`. */
const formPost = (proc: Proc, label: string, path: string, body: string): Contender => ({
  label,
  url: proc.url + path,
  method: 'POST',
  headers: clientAuth,
  body,
  pid: proc.child.pid,
});

async function oidcRows(): Promise<Row[]> {
  const rows: Row[] = [];
  const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const oidcEnv = { OIDC_PRIVATE_KEY: pem };
  const db = new Client({ connectionString: DATABASE_URL });
  await db.connect();
  await serviceClient(db);
  await baselineTables(db);
  const { rows: users } = await db.query<{ id: number }>('select id from users where email = any($1) order by id', [
    Array.from({ length: BROWSERS }, (_, i) => browserUser(i)),
  ]);
  const userIds = users.map((u) => Number(u.id));

  let service = await startProvider(oidcEnv);
  const baseline = await startBaseline(1, false, oidcEnv);
  const bare = await startBareProvider(pem);
  const browsers = await signedInBrowsers(service.url);

  // The code's exchange. Each turn's codes are made just before it: the service's by the signed-in
  // browsers' authorization requests, the baseline's stored directly. A warm-up turn of each sizes the
  // turns: about SECONDS of requests, no more codes than the browsers make in CODE_MAKING_SECONDS.
  const warm = await serviceCodes(service.url, browsers, 200);
  const ourRate = (await codeTurn(service, warm.codes)).rps;
  const theirRate = (await codeTurn(baseline, await baselineCodes(db, userIds, 400))).rps;
  const ourCount = Math.max(100, Math.min(Math.round(ourRate * SECONDS), Math.round(warm.perSecond * CODE_MAKING_SECONDS)));
  const theirCount = Math.max(100, Math.round(theirRate * SECONDS));
  const ours: Figures[] = [];
  const theirs: Figures[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const turns = [
      async () => ours.push(await codeTurn(service, (await serviceCodes(service.url, browsers, ourCount)).codes)),
      async () => theirs.push(await codeTurn(baseline, await baselineCodes(db, userIds, theirCount))),
    ];
    for (let i = 0; i < turns.length; i++) await turns[(round + i) % turns.length]();
  }
  rows.push(
    against(
      'POST /oauth2/token (authorization_code, PKCE)',
      1,
      ours,
      theirs,
      `${ourCount} and ${theirCount} codes a turn; the service's made beforehand by ${BROWSERS} browsers signed in through the hosted page (${warm.perSecond.toFixed(0)}/s)`,
    ),
  );

  // Refresh token rotation: pools of grants, each connection refreshing one grant at a time.
  const refreshCodes = (await serviceCodes(service.url, browsers, GRANTS, true)).codes;
  const ourPool: string[] = [];
  for (const code of refreshCodes) {
    const tokens = await exchange(service.url, code);
    if (!tokens.refresh_token) throw new Error('a code asked for with offline_access gave no refresh token');
    ourPool.push(tokens.refresh_token);
  }
  const theirPool = await baselineRefreshTokens(db, userIds, GRANTS);
  const barePool = (await bareTokens(bare, GRANTS, OFFLINE_SCOPE)).map((tokens) => tokens.refresh_token!);
  // A warm-up turn of each sizes the turns: about SECONDS of requests.
  const pools = [ourPool, theirPool, barePool];
  const servers = [service, baseline, bare];
  const amounts: number[] = [];
  for (let i = 0; i < servers.length; i++)
    amounts.push(Math.max(100, Math.round((await refreshTurn(servers[i], pools[i], 200)).rps * SECONDS)));
  const refreshed: Figures[][] = servers.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < servers.length; i++) {
      const at = (round + i) % servers.length;
      refreshed[at].push(await refreshTurn(servers[at], pools[at], amounts[at]));
    }
  }
  rows.push(
    against(
      'POST /oauth2/token (refresh_token, rotated)',
      1,
      refreshed[0],
      refreshed[1],
      `${amounts[0]} and ${amounts[1]} refreshes a turn over ${GRANTS} grants each; ${ourPool.length} and ${theirPool.length} grants left at the end`,
    ),
  );
  rows.push(
    against(
      'POST /oauth2/token (refresh_token, rotated)',
      1,
      refreshed[0],
      refreshed[2],
      `${BARE_NOTE}; ${amounts[0]} and ${amounts[2]} refreshes a turn over ${GRANTS} grants each; ${ourPool.length} and ${barePool.length} grants left at the end`,
    ),
  );

  // The user info, with an access token of each server's own.
  const ourToken = (await exchange(service.url, (await serviceCodes(service.url, browsers, 1)).codes[0])).access_token;
  const theirToken = (await exchange(baseline.url, (await baselineCodes(db, userIds, 1))[0])).access_token;
  // The bare provider's is bound to a provider session, as the service's is (no offline_access).
  const bareToken = (await bareTokens(bare, 1, 'openid profile email'))[0].access_token;
  const info = await takeTurns([
    on(service, 'service', '/oauth2/userinfo', ourToken),
    on(baseline, 'baseline', '/oauth2/userinfo', theirToken),
    on(bare, 'bare provider', '/oauth2/userinfo', bareToken),
  ]);
  rows.push(against('GET /oauth2/userinfo', 1, info[0], info[1]));
  rows.push(against('GET /oauth2/userinfo', 1, info[0], info[2], BARE_NOTE));
  await baseline.stop();

  // The application introspecting the same access tokens; the baseline has no such endpoint.
  const bothActive = async () => {
    await expectActive(service, ourToken);
    await expectActive(bare, bareToken);
  };
  await bothActive();
  const introspected = await takeTurns([
    formPost(service, 'service', '/oauth2/introspect', introspectionBody(ourToken)),
    formPost(bare, 'bare provider', '/oauth2/introspect', introspectionBody(bareToken)),
  ]);
  await bothActive();
  rows.push(against('POST /oauth2/introspect (an access token)', 1, introspected[0], introspected[1], BARE_NOTE));

  // The client credentials grant: an opaque access token stored on every request.
  const credentials = 'grant_type=client_credentials';
  const issued = await takeTurns([
    formPost(service, 'service', '/oauth2/token', credentials),
    formPost(bare, 'bare provider', '/oauth2/token', credentials),
  ]);
  rows.push(against('POST /oauth2/token (client_credentials)', 1, issued[0], issued[1], BARE_NOTE));
  await bare.stop();

  // Whole logins through the hosted page, in a fresh process, against the bcrypt ceiling measured here.
  await service.stop();
  service = await startProvider(oidcEnv);
  const ceiling = await bcryptCeiling(5);
  const logins = await hostedLogins(service.url, LOGIN_SECONDS);
  const cores = availableParallelism();
  rows.push({
    route: `logins through the hosted page (${BROWSERS} browsers)`,
    processes: 1,
    service: logins,
    ratio: logins.rps / ceiling,
    notes: `${(logins.rps / cores).toFixed(2)} logins/s per core; bcrypt ceiling ${ceiling.toFixed(2)}/s; a login is GET /oauth2/authorize, the sign-in page, its form posted, the resumed authorization, the code exchanged`,
  });
  // The same logins again, /oauth2/userinfo probed at a fixed rate meanwhile, from a process of its own.
  const [during, userinfo] = await Promise.all([
    hostedLogins(service.url, LOGIN_SECONDS),
    new Promise((resolve) => setTimeout(resolve, 2000)).then(() =>
      probe({ url: `${service.url}/oauth2/userinfo`, headers: bearer(ourToken), connections: 2, seconds: SECONDS, rate: 50 }),
    ),
  ]);
  rows.push({
    route: 'GET /oauth2/userinfo during hosted-page logins',
    processes: 1,
    service: userinfo,
    notes: `probe at 50 req/s; ${during.rps.toFixed(1)} logins/s meanwhile`,
  });
  await service.stop();
  await db.end();
  return rows;
}

/** Logins through the hosted page for `seconds`, one browser per user at a time; each login's time. */
async function hostedLogins(url: string, seconds: number): Promise<Figures> {
  const until = Date.now() + seconds * 1000;
  const times: number[] = [];
  let errors = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: BROWSERS }, async (_, i) => {
      while (Date.now() < until) {
        const at = performance.now();
        try {
          await hostedLogin(url, browserUser(i));
          times.push(performance.now() - at);
        } catch (error) {
          if (errors++ === 0) console.error(error);
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  times.sort((a, b) => a - b);
  const at = (q: number) => Math.round(times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0);
  return {
    rps: times.length / elapsed,
    p50: at(0.5),
    p99: at(0.99),
    errors,
    statuses: { '2xx': times.length },
    rssMb: 0,
    rssPeakMb: 0,
  };
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
