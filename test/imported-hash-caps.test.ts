import { startTestApp, uniqueEmail, type TestContext } from './support/app.js';
import { expectError } from './support/expect.js';

// An imported hash is checked at every sign-in, a wrong password included, on the shared hashing
// pool: its parameters are capped so that no account can hold that pool for seconds.

const SALT = 'c2FsdHNhbHRzYWx0';
const DIGEST = 'aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaA';
const argon2 = (params: string) => `$argon2id$v=19$${params}$${SALT}$${DIGEST}`;
const bcrypt = (cost: number) => `$2b$${cost}$${'a'.repeat(53)}`;
const pbkdf2 = (iterations: number) => `pbkdf2_sha256$${iterations}$somesalt$${'A'.repeat(43)}=`;

/** Hashes exactly at the caps: imported, though none of them need verify anything. */
const AT_THE_CAPS = [bcrypt(15), argon2('m=262144,t=10,p=8'), pbkdf2(10_000_000)];

let t: TestContext;
let adminToken: string;
beforeAll(async () => {
  t = await startTestApp();
  adminToken = await t.adminToken();
});
afterAll(() => t?.close());

const row = (password_hash: string) => ({ email: uniqueEmail('capped'), name: 'Imported', password_hash });
const usersWith = (emails: string[]) => t.db.selectFrom('users').select('email').where('email', 'in', emails).execute();

it('refuses a whole import holding an argon2 hash of 1 GiB with 422 on that row, and writes no row', async () => {
  const users = [row(AT_THE_CAPS[0]), row(argon2('m=1048576,t=1,p=1'))];
  const res = await t.post('/api/users/import', { users }, { token: adminToken });
  expectError(res, 422, 'VALIDATION_ERROR');
  expect(res.body.error.details).toEqual([
    { field: 'body.users.1.password_hash', message: 'password_hash uses more than 262144 KiB (256 MiB) of memory' },
  ]);
  expect(await usersWith(users.map((user) => user.email))).toEqual([]);
});

it('names every parameter beyond its cap, one detail per row', async () => {
  const users = [
    row(bcrypt(16)),
    row(argon2('m=262145,t=1,p=1')),
    row(argon2('m=65536,t=11,p=1')),
    row(argon2('m=65536,t=1,p=9')),
    row(pbkdf2(10_000_001)),
  ];
  const res = await t.post('/api/users/import', { users }, { token: adminToken });
  expectError(res, 422, 'VALIDATION_ERROR');
  expect(res.body.error.details).toEqual([
    { field: 'body.users.0.password_hash', message: 'password_hash has a bcrypt cost above 15' },
    { field: 'body.users.1.password_hash', message: 'password_hash uses more than 262144 KiB (256 MiB) of memory' },
    { field: 'body.users.2.password_hash', message: 'password_hash has more than 10 iterations' },
    { field: 'body.users.3.password_hash', message: 'password_hash has a parallelism above 8' },
    { field: 'body.users.4.password_hash', message: 'password_hash has more than 10000000 iterations' },
  ]);
  expect(await usersWith(users.map((user) => user.email))).toEqual([]);
});

it('imports hashes exactly at the caps', async () => {
  const users = AT_THE_CAPS.map(row);
  const res = await t.post('/api/users/import', { users }, { token: adminToken });
  expect(res.status).toBe(200);
  expect(res.body.meta).toEqual({ created: 3, conflict: 0, invalid: 0 });
  const stored = await t.db
    .selectFrom('users')
    .select('password_hash')
    .where(
      'email',
      'in',
      users.map((user) => user.email),
    )
    .orderBy('id')
    .execute();
  expect(stored.map((user) => user.password_hash)).toEqual(AT_THE_CAPS);
});
