import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import vectors from './fixtures/password-hashes.json' with { type: 'json' };
import { startTestApp, uniqueEmail, type TestContext } from './support/app.js';
import { cli } from './support/cli.js';
import { expectError } from './support/expect.js';

const VECTORS: Array<{ format: string; password: string; hash: string }> = vectors;
const BCRYPT = VECTORS.find((v) => v.hash.startsWith('$2b$04$'))!;
const DJANGO = VECTORS.find((v) => v.hash.startsWith('pbkdf2_sha256$20000$'))!;
const UNKNOWN_FORMAT =
  'password_hash is in an unknown format (bcrypt $2a$/$2b$/$2y$, $argon2id$ or $argon2i$ v=19, or pbkdf2_sha256$ as Django writes it)';

let t: TestContext;
let first: TestContext;
let admin: ReturnType<TestContext['clientFor']>;
beforeAll(async () => {
  first = t = await startTestApp();
  admin = t.clientFor(await t.adminToken());
});
afterAll(async () => {
  await t.close();
  // The first app owns the database; the ones started after a command only borrowed it.
  if (t !== first) await first.close();
});

/** The embedded database serves one process: the app steps aside while a command runs, then starts again on it. */
async function whileStopped<T>(work: () => Promise<T>): Promise<T> {
  await t.stop();
  try {
    return await work();
  } finally {
    t = await startTestApp({}, { sameDatabaseAs: first });
    admin = t.clientFor(await t.adminToken());
  }
}

const row = (overrides: Record<string, unknown> = {}) => ({
  email: uniqueEmail('import'),
  name: 'Imported User',
  password_hash: BCRYPT.hash,
  ...overrides,
});

describe('POST /api/users/import', () => {
  it('answers one result per row, in order, creates the valid rows whole and nothing of the others', async () => {
    const taken = await t.register();
    const deleted = await t.register();
    expect((await t.delete(`/api/users/${deleted.id}`, { token: deleted.access })).status).toBe(204);
    const fresh = row({
      email: `  ${uniqueEmail('Mixed').toUpperCase()} `,
      name: '  Ada  ',
      role: 'admin',
      email_verified: true,
      password_hash: DJANGO.hash,
    });
    const users = [
      fresh,
      row({ email: taken.email.toUpperCase() }),
      row({ email: deleted.email }),
      row({ password_hash: 'plain-text-password' }),
      row({ email: fresh.email }),
      row({ email: 'not-an-address' }),
      row({ name: 'Eve\u202Eevil' }),
      row({ role: 'root' }),
      row({ password_hash: '$2b$03$' + 'a'.repeat(53) }),
      row({ password_hash: '$argon2d$v=19$m=1024,t=1,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA' }),
      row({ name: 'Ada\u2028INFO admin signed in' }),
    ];
    const { data, error } = await admin.POST('/api/users/import', { body: { users } });
    expect(error).toBeUndefined();
    const email = (i: number) => users[i].email.trim().toLowerCase();
    expect(data).toEqual({
      success: true,
      data: [
        { row: 1, email: email(0), status: 'created' },
        { row: 2, email: taken.email, status: 'conflict' },
        { row: 3, email: deleted.email, status: 'conflict' },
        { row: 4, email: email(3), status: 'invalid', reason: UNKNOWN_FORMAT },
        { row: 5, email: email(0), status: 'conflict' },
        { row: 6, email: 'not-an-address', status: 'invalid', reason: 'email is not an e-mail address' },
        { row: 7, email: email(6), status: 'invalid', reason: expect.stringMatching(/^name must be 1 to 100 characters/) },
        { row: 8, email: email(7), status: 'invalid', reason: 'role must be user or admin' },
        { row: 9, email: email(8), status: 'invalid', reason: UNKNOWN_FORMAT },
        { row: 10, email: email(9), status: 'invalid', reason: UNKNOWN_FORMAT },
        { row: 11, email: email(10), status: 'invalid', reason: expect.stringMatching(/^name must be 1 to 100 characters/) },
      ],
      meta: { created: 1, conflict: 3, invalid: 7 },
    });

    const created = await t.db.selectFrom('users').selectAll().where('email', '=', email(0)).executeTakeFirstOrThrow();
    expect(created).toMatchObject({
      name: 'Ada',
      role: 'admin',
      is_active: true,
      email_verified: true,
      password_hash: DJANGO.hash,
      deleted_at: null,
    });
    const invalid = await t.db.selectFrom('users').select('email').where('email', 'in', [3, 5, 6, 7, 8, 9, 10].map(email)).execute();
    expect(invalid).toEqual([]);
    // The account that was there keeps its own password.
    expect((await t.post('/api/auth/login/json', { email: taken.email, password: taken.password })).status).toBe(200);
    const events = await t.db
      .withTables<{
        audit_events: { event_type: string; actor_user_id: number | null; subject_user_id: number | null; details: unknown };
      }>()
      .selectFrom('audit_events')
      .select(['event_type', 'actor_user_id', 'details'])
      .where('subject_user_id', '=', created.id)
      .execute();
    const adminId = (await t.db.selectFrom('users').select('id').where('email', '=', 'admin@example.com').executeTakeFirstOrThrow()).id;
    expect(events).toEqual([
      { event_type: 'user.created', actor_user_id: adminId, details: { role: 'admin', is_active: true, source: 'import' } },
    ]);
    // The imported user signs in with the password the other system knew.
    expect((await t.post('/api/auth/login/json', { email: email(0), password: DJANGO.password })).status).toBe(200);
  });

  it('never takes a plain password for a hash: the row is refused and nobody signs in with it', async () => {
    const users = [row({ password_hash: 'correct horse battery' })];
    const { data } = await admin.POST('/api/users/import', { body: { users } });
    expect(data?.data[0]).toMatchObject({ status: 'invalid', reason: UNKNOWN_FORMAT });
    expectError(
      await t.post('/api/auth/login/json', { email: users[0].email, password: 'correct horse battery' }),
      401,
      'INVALID_CREDENTIALS',
    );
  });

  it('takes 1,000 rows in a body over MAX_BODY_BYTES, and refuses 1,001 with 422', async () => {
    const users = Array.from({ length: 1000 }, () => row());
    expect(JSON.stringify({ users }).length).toBeGreaterThan(t.config.server.maxBodyBytes);
    const { data } = await admin.POST('/api/users/import', { body: { users } });
    expect(data?.meta).toEqual({ created: 1000, conflict: 0, invalid: 0 });
    const res = await t.post('/api/users/import', { users: [...users, row()] }, { token: await t.adminToken() });
    expectError(res, 422, 'VALIDATION_ERROR');
    expect(res.body.error.details).toEqual([expect.objectContaining({ field: 'body.users' })]);
    // Another route keeps its own limit.
    expectError(await t.post('/api/users', { users }, { token: await t.adminToken() }), 413, 'PAYLOAD_TOO_LARGE');
  });

  it('is for admins only', async () => {
    const user = await t.register();
    const users = [row()];
    expectError(await t.post('/api/users/import', { users }, { token: user.access }), 403, 'FORBIDDEN');
    expect((await t.post('/api/users/import', { users })).status).toBe(401);
    expect(await t.db.selectFrom('users').select('id').where('email', '=', users[0].email).execute()).toEqual([]);
  });
});

describe('npm run cli -- import-users FILE.jsonl', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'import-users-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('imports a file in batches, lists the rows not created by line, and exits 1 for the invalid ones', async () => {
    const taken = await t.register();
    const users = Array.from({ length: 2500 }, () => row());
    const lines = users.map((user) => JSON.stringify(user));
    lines.splice(
      1200,
      0,
      '{"email": "broken',
      JSON.stringify(row({ email: taken.email })),
      '',
      JSON.stringify(row({ password_hash: 'md5$abc$def' })),
    );
    const file = join(dir, 'users.jsonl');
    await writeFile(file, `${lines.join('\n')}\n`);
    let run = await whileStopped(() => cli(t, ['import-users', file]));
    expect(run.stdout).toBe(
      [
        'line 1201: invalid (no e-mail): the row is not a JSON object',
        `line 1202: conflict ${taken.email}`,
        `line 1204: invalid ${(JSON.parse(lines[1203]) as { email: string }).email}: ${UNKNOWN_FORMAT}`,
        `imported ${file}: 2500 created, 1 conflicts, 2 invalid, of 2503 rows`,
        '',
      ].join('\n'),
    );
    expect(run.stderr).toBe('error: 2 rows were invalid (listed above); every other row was imported\n');
    expect(run.code).toBe(1);
    const stored = await t.db
      .selectFrom('users')
      .select('email')
      .where(
        'email',
        'in',
        users.map((u) => u.email),
      )
      .execute();
    expect(stored).toHaveLength(2500);
    expect((await t.post('/api/auth/login/json', { email: users[2499].email, password: BCRYPT.password })).status).toBe(200);

    // Run again: every row is there already, and says so.
    run = await whileStopped(() => cli(t, ['import-users', file]));
    expect(run.stdout).toContain('imported');
    expect(run.stdout).toContain('0 created, 2501 conflicts, 2 invalid, of 2503 rows');
  });

  it('says which file it cannot read', async () => {
    const missing = join(dir, 'missing.jsonl');
    expect(await whileStopped(() => cli(t, ['import-users', missing]))).toEqual({
      code: 1,
      stdout: '',
      stderr: `error: cannot read ${missing}: ENOENT: no such file or directory, open '${missing}'\n`,
    });
    expect(await cli(t, ['import-users'])).toMatchObject({ code: 2, stderr: expect.stringContaining('import-users needs FILE.jsonl') });
  });
});
