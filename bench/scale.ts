/**
 * `make bench-scale`: the user list and search at 10,000, 100,000 and 1,000,000 users, through the
 * service over HTTP, with the query plans behind them. Users are bulk-loaded with one INSERT ... SELECT
 * from generate_series per step, not through the API. PostgreSQL at BENCH_SCALE_DATABASE_URL (recreated;
 * by default account_bench_scale on the local server). Then `import-users` (the CLI, built) brings in
 * 100,000 more users from a JSON-lines file, timed from spawn to exit. Writes
 * bench/results/scale-<time>.json.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { hash } from '@node-rs/bcrypt';
import { Client } from 'pg';
import { freePort, freshDatabase, login, ROOT, SECRET_KEY, startProcess, table, timeSequential } from './lib.js';

const DATABASE_URL = process.env.BENCH_SCALE_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/account_bench_scale';
const SIZES = [10_000, 100_000, 1_000_000];
const RUNS = 200;
const PASSWORD = 'bench-password-1';
const IMPORT_ROWS = Number(process.env.BENCH_IMPORT_ROWS ?? 100_000);

const FIRST = [
  'Ada',
  'Alan',
  'Barbara',
  'Dennis',
  'Donald',
  'Edsger',
  'Frances',
  'Grace',
  'Hedy',
  'John',
  'Katherine',
  'Ken',
  'Linus',
  'Margaret',
  'Niklaus',
  'Radia',
  'Shafi',
  'Tim',
  'Vint',
  'Whitfield',
];
const LAST = [
  'Lovelace',
  'Turing',
  'Liskov',
  'Shannon',
  'Knuth',
  'Dijkstra',
  'Allen',
  'Hopper',
  'Lamarr',
  'McCarthy',
  'Johnson',
  'Thompson',
  'Torvalds',
  'Hamilton',
  'Wirth',
  'Perlman',
  'Goldwasser',
  'Berners-Lee',
  'Cerf',
  'Diffie',
  'Backus',
  'Kay',
  'Ritchie',
  'Hoare',
  'Milner',
  'Lamport',
  'Codd',
  'Gray',
  'Stonebraker',
  'Engelbart',
  'Sutherland',
  'Minsky',
  'Rivest',
  'Shamir',
  'Adleman',
  'Hellman',
  'Kahn',
  'Postel',
  'Wozniak',
  'Bell',
  'Floyd',
  'Tarjan',
  'Hartmanis',
  'Stearns',
  'Cook',
  'Karp',
  'Rabin',
  'Scott',
  'Valiant',
  'Yao',
];

/** Appends users up to `size` (ids from `from`): 1 in 50 inactive, 1 in 100 deleted, names from the lists above. */
async function bulkLoad(client: Client, from: number, size: number, passwordHash: string): Promise<number> {
  const started = performance.now();
  await client.query('begin');
  // The per-row counter trigger is for the API's changes; a bulk load sets the counters once, after.
  await client.query('alter table users disable trigger users_count_rows');
  await client.query(
    `insert into users (email, name, password_hash, is_active, email_verified, created_at, updated_at, deleted_at)
     select 'user' || g || '@example.com',
            ($1::text[])[1 + g % ${FIRST.length}] || ' ' || ($2::text[])[1 + (g / ${FIRST.length}) % ${LAST.length}],
            $3, g % 50 <> 0, true,
            timestamptz '2026-01-01' + g * interval '1 second', timestamptz '2026-01-01' + g * interval '1 second',
            case when g % 100 = 7 then timestamptz '2026-06-01' end
     from generate_series($4::int, $5::int) g`,
    [FIRST, LAST, passwordHash, from, size],
  );
  await client.query('alter table users enable trigger users_count_rows');
  await client.query(`
    update user_counts c set n = (select count(*) from users u where user_state(u.deleted_at, u.is_active) = c.state)`);
  await client.query('commit');
  await client.query('analyze users');
  return (performance.now() - started) / 1000;
}

/**
 * `npm run cli -- import-users` on a file of `rows` users with bcrypt hashes (the hash is only read
 * on import, so one will do), into the database as it stands; seconds from spawn to exit.
 */
async function timeImport(rows: number, passwordHash: string): Promise<{ seconds: number; output: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'account-import-'));
  try {
    const file = join(dir, 'users.jsonl');
    const lines = Array.from({ length: rows }, (_, i) =>
      JSON.stringify({ email: `imported${i + 1}@example.com`, name: `Imported User ${i + 1}`, password_hash: passwordHash }),
    );
    writeFileSync(file, `${lines.join('\n')}\n`);
    const started = performance.now();
    const { stdout } = await promisify(execFile)(process.execPath, ['dist/src/cli/index.js', 'import-users', file], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL, SECRET_KEY, LOG_LEVEL: 'warn' },
      maxBuffer: 64 * 1024 * 1024,
    });
    return { seconds: (performance.now() - started) / 1000, output: stdout.trim().split('\n').pop() ?? '' };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The statements the service runs for each request measured, as it sends them (see src/users/user-repository.ts). */
const COLUMNS = '"id", "email", "name", "password_hash", "role", "is_active", "email_verified", "created_at", "updated_at", "deleted_at"';
const LIVE = '"deleted_at" is null';
const SEARCH = `("email" like $1 or lower("name") like $1)`;
const PLANS: Record<string, { sql: string; params: (size: number) => unknown[] }> = {
  'first page': {
    sql: `select ${COLUMNS} from "users" where ${LIVE} order by "created_at" desc, "id" desc limit 20 offset 0`,
    params: () => [],
  },
  'first page total': {
    sql: `select coalesce(sum(n), 0)::int as "total" from "user_counts" where "state" in ('active', 'inactive')`,
    params: () => [],
  },
  'cursor page (middle)': {
    sql: `select ${COLUMNS} from "users" where ${LIVE} and "id" > $1 order by "id" asc limit 21`,
    params: (size) => [Math.floor(size / 2)],
  },
  'q by e-mail': {
    sql: `select ${COLUMNS} from "users" where ${LIVE} and ${SEARCH} order by "created_at" desc, "id" desc limit 20 offset 0`,
    params: (size) => [`%user${Math.floor(size / 2)}@%`],
  },
  'q by e-mail total': {
    sql: `select count(*)::int as "total" from "users" where ${LIVE} and ${SEARCH}`,
    params: (size) => [`%user${Math.floor(size / 2)}@%`],
  },
  'q by name': {
    sql: `select ${COLUMNS} from "users" where ${LIVE} and ${SEARCH} order by "created_at" desc, "id" desc limit 20 offset 0`,
    params: () => ['%grace hopper%'],
  },
  'q by name total': { sql: `select count(*)::int as "total" from "users" where ${LIVE} and ${SEARCH}`, params: () => ['%grace hopper%'] },
};

async function main(): Promise<void> {
  await freshDatabase(DATABASE_URL);
  const service = await startProcess(
    ['dist/src/server.js'],
    // No mail server here: production needs MAIL_LOG_LINKS=true to start without one.
    {
      NODE_ENV: 'production',
      DATABASE_URL,
      SECRET_KEY,
      LOG_LEVEL: 'warn',
      RATE_LIMIT_ENABLED: 'false',
      BCRYPT_COST: '10',
      MAIL_LOG_LINKS: 'true',
    },
    await freePort(),
    '/health/ready',
  );
  const client = new Client({ connectionString: DATABASE_URL });
  await client.connect();
  const passwordHash = await hash(PASSWORD, 10);
  await client.query(
    `insert into users (email, name, password_hash, role, email_verified) values ('admin@example.com', 'Admin', $1, 'admin', true)`,
    [passwordHash],
  );
  const token = await login(service.url, 'admin@example.com', PASSWORD);
  const get = async (path: string) => {
    const res = await fetch(service.url + path, { headers: { authorization: `Bearer ${token}` } });
    if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
    return (await res.json()) as any;
  };

  const rows: Array<Record<string, number | string>> = [];
  const plans: Record<string, string> = {};
  let loaded = 0;
  for (const size of SIZES) {
    const seconds = await bulkLoad(client, loaded + 1, size, passwordHash);
    loaded = size;
    const live = Number((await client.query('select count(*) as n from users where deleted_at is null')).rows[0].n);
    const first = await get('/api/users?page=1&per_page=20');
    if (first.meta.total !== live) throw new Error(`meta.total ${first.meta.total} is not the ${live} live users`);
    const email = `user${Math.floor(size / 2)}@`;
    const positions = [0, Math.floor(size / 2), size - 50];
    const cursorTimes = [];
    for (const position of positions) cursorTimes.push(await timeSequential(() => get(`/api/users?cursor=${position}&limit=20`), RUNS));
    const row = {
      users: size.toLocaleString('en'),
      'load s': seconds.toFixed(1),
      'first page p50': (await timeSequential(() => get('/api/users?page=1&per_page=20'), RUNS)).p50,
      'first page, inactive p50': (await timeSequential(() => get('/api/users?page=1&per_page=20&status=inactive'), RUNS)).p50,
      'cursor p50 (worst of start, middle, end)': Math.max(...cursorTimes.map((t) => t.p50)),
      'q e-mail p50': (await timeSequential(() => get(`/api/users?q=${encodeURIComponent(email)}`), RUNS)).p50,
      'q name p50': (await timeSequential(() => get('/api/users?q=grace%20hopper'), 50)).p50,
      'q name matches': (await get('/api/users?q=grace%20hopper')).meta.total,
    };
    rows.push(row);
    console.log(`${size.toLocaleString('en')} users loaded in ${seconds.toFixed(1)} s; measured`);
    if (size === SIZES[SIZES.length - 1]) {
      for (const [name, plan] of Object.entries(PLANS)) {
        const result = await client.query(`explain (analyze, buffers, costs off) ${plan.sql}`, plan.params(size));
        plans[name] = result.rows.map((r) => r['QUERY PLAN']).join('\n');
      }
    }
  }
  await service.stop();
  const imported = await timeImport(IMPORT_ROWS, passwordHash);
  const importedCount = Number((await client.query(`select count(*) as n from users where email like 'imported%@example.com'`)).rows[0].n);
  if (importedCount !== IMPORT_ROWS) throw new Error(`import-users created ${importedCount} users, not ${IMPORT_ROWS}`);
  await client.end();

  const header = Object.keys(rows[0]);
  console.log(`\nms over HTTP on loopback, ${RUNS} sequential requests each (50 for the name search)\n`);
  console.log(
    table(
      header,
      rows.map((row) => header.map((key) => row[key])),
    ),
  );
  console.log(
    `\nimport-users, ${IMPORT_ROWS.toLocaleString('en')} rows into ${loaded.toLocaleString('en')} users: ${imported.seconds.toFixed(1)} s (${imported.output})`,
  );
  for (const [name, plan] of Object.entries(plans))
    console.log(`\n-- ${name} at ${SIZES[SIZES.length - 1].toLocaleString('en')} users\n${plan}`);

  const date = new Date().toISOString();
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  const file = join(ROOT, 'bench/results', `scale-${date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    `${JSON.stringify({ date, runs: RUNS, rows, importUsers: { rows: IMPORT_ROWS, into: loaded, seconds: imported.seconds }, plans }, null, 2)}\n`,
  );
  console.log(`\nfigures written to ${file}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
