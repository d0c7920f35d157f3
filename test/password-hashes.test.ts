import vectors from './fixtures/password-hashes.json' with { type: 'json' };
import { startTestApp, uniqueEmail, type TestContext } from './support/app.js';
import { problemsOf } from './support/config.js';
import { expectError } from './support/expect.js';

// Fixed hashes made by other implementations than the service's (see test/fixtures/make-password-hashes.py):
// Django's pbkdf2_sha256 by Python's hashlib, bcrypt $2a$/$2b$/$2y$ by crypt(3), argon2id/argon2i by node-argon2.
interface Vector {
  format: 'pbkdf2_sha256' | 'bcrypt' | 'argon2id' | 'argon2i';
  password: string;
  hash: string;
}
const VECTORS = vectors as Vector[];

/** The hash's format and parameters, without salt or digest, and the password. */
const label = (v: Vector) =>
  `${/^(\$2[aby]\$\d\d|\$argon2i?d?\$v=19\$[^$]+|pbkdf2_sha256\$\d+)/.exec(v.hash)?.[0]} (${JSON.stringify(v.password)})`;

/** Imports one user per vector through the API; returns their e-mails, in the vectors' order. */
async function importVectors(t: TestContext, vectors: Vector[]): Promise<string[]> {
  const emails = vectors.map(() => uniqueEmail('imported'));
  const client = t.clientFor(await t.adminToken());
  const { data, error } = await client.POST('/api/users/import', {
    body: { users: vectors.map((v, i) => ({ email: emails[i], name: `Imported ${v.format}`, password_hash: v.hash })) },
  });
  expect(error).toBeUndefined();
  expect(data?.data.map((r) => r.status)).toEqual(vectors.map(() => 'created'));
  return emails;
}

async function storedHash(t: TestContext, email: string): Promise<string> {
  const row = await t.db.selectFrom('users').select('password_hash').where('email', '=', email).executeTakeFirstOrThrow();
  return row.password_hash;
}

const login = (t: TestContext, email: string, password: string) => t.post('/api/auth/login/json', { email, password });

describe('with PASSWORD_HASH_ALGORITHM=argon2id', () => {
  let t: TestContext;
  let emails: string[];
  beforeAll(async () => {
    t = await startTestApp({ PASSWORD_HASH_ALGORITHM: 'argon2id', ARGON2_MEMORY_KIB: '2048', ARGON2_ITERATIONS: '1' });
    emails = await importVectors(t, VECTORS);
  });
  afterAll(() => t.close());

  it('stores a new password as an argon2id hash with the configured parameters', async () => {
    const user = await t.register();
    expect(await storedHash(t, user.email)).toMatch(/^\$argon2id\$v=19\$m=2048,t=1,p=1\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/);
    expect((await login(t, user.email, user.password)).status).toBe(200);
  });

  describe.each(VECTORS.map((v, i) => [label(v), i] as const))('an imported %s', (_name, index) => {
    const vector = () => VECTORS[index];
    const email = () => emails[index];

    it('refuses a wrong password and leaves the hash as it was', async () => {
      for (const wrong of [`${vector().password}x`, vector().password.toUpperCase(), 'password-123']) {
        expectError(await login(t, email(), wrong), 401, 'INVALID_CREDENTIALS');
      }
      expect(await storedHash(t, email())).toBe(vector().hash);
    });

    it('signs in with the old password; a weaker hash is replaced by argon2id at that sign-in, which then signs in too', async () => {
      const res = await login(t, email(), vector().password);
      expect(res.status).toBe(200);
      expect(res.body.data.user.email).toBe(email());
      const after = await storedHash(t, email());
      // The default argon2id setting (19 MiB, two passes) is stronger than this app's: it stays.
      const stronger = /^\$argon2id\$v=19\$m=19456,/.test(vector().hash);
      if (stronger) expect(after).toBe(vector().hash);
      else expect(after).toMatch(/^\$argon2id\$v=19\$m=2048,t=1,p=1\$/);
      expect((await login(t, email(), vector().password)).status).toBe(200);
      expect(await storedHash(t, email())).toBe(after);
      expectError(await login(t, email(), `${vector().password}!`), 401, 'INVALID_CREDENTIALS');
    });
  });
});

describe('with PASSWORD_HASH_ALGORITHM=bcrypt at cost 5', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await startTestApp({ BCRYPT_COST: '5' });
  });
  afterAll(() => t.close());

  it('replaces a hash of another algorithm, or bcrypt at a lower cost, with bcrypt at cost 5', async () => {
    const vectors = [
      VECTORS.find((v) => v.format === 'pbkdf2_sha256' && v.hash.startsWith('pbkdf2_sha256$20000$'))!,
      VECTORS.find((v) => v.format === 'argon2i')!,
      VECTORS.find((v) => v.hash.startsWith('$2y$04$'))!,
      VECTORS.find((v) => v.hash.startsWith('$2a$04$'))!,
    ];
    const emails = await importVectors(t, vectors);
    for (const [i, v] of vectors.entries()) {
      expect((await login(t, emails[i], v.password)).status).toBe(200);
      expect(await storedHash(t, emails[i])).toMatch(/^\$2[by]\$05\$[./A-Za-z0-9]{53}$/);
      expect((await login(t, emails[i], v.password)).status).toBe(200);
    }
  });

  it('keeps a bcrypt hash of a higher cost', async () => {
    const vector = VECTORS.find((v) => v.hash.startsWith('$2b$06$'))!;
    const [email] = await importVectors(t, [vector]);
    expect((await login(t, email, vector.password)).status).toBe(200);
    expect(await storedHash(t, email)).toBe(vector.hash);
  });

  it('re-hashes a sign-in only while the hash is still the one checked: a password changed meanwhile stays', async () => {
    const [email] = await importVectors(t, [VECTORS.find((v) => v.hash.startsWith('pbkdf2_sha256$20000$'))!]);
    const admin = t.clientFor(await t.adminToken());
    const row = await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow();
    // The admin's new password and the sign-in with the old one race; whichever order they land in,
    // the admin's password is the one that works afterwards.
    const password = VECTORS.find((v) => v.hash.startsWith('pbkdf2_sha256$20000$'))!.password;
    await Promise.all([
      login(t, email, password),
      admin.PUT('/api/users/{id}', { params: { path: { id: row.id } }, body: { password: 'set-by-the-admin-1' } }),
    ]);
    expect((await login(t, email, 'set-by-the-admin-1')).status).toBe(200);
    expectError(await login(t, email, password), 401, 'INVALID_CREDENTIALS');
  });
});

describe('hashing settings', () => {
  it('reports a wrong algorithm, argon2 parameters or range API URL, each by name', () => {
    expect(
      problemsOf({ PASSWORD_HASH_ALGORITHM: 'md5', ARGON2_MEMORY_KIB: '512', ARGON2_ITERATIONS: '0', PWNED_PASSWORDS_URL: 'ftp://x' }),
    ).toEqual([
      'PASSWORD_HASH_ALGORITHM must be one of bcrypt, argon2id, got "md5"',
      'ARGON2_MEMORY_KIB must be between 1024 and 4194304, got 512',
      'ARGON2_ITERATIONS must be between 1 and 100, got 0',
      'PWNED_PASSWORDS_URL must be an http:// or https:// URL, got "ftp://x"',
    ]);
    expect(problemsOf({ PASSWORD_HASH_ALGORITHM: 'Argon2id', PWNED_PASSWORDS_CHECK: 'true' })).toEqual([]);
  });
});
