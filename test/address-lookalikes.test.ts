import { startTestApp, uniqueEmail, type RegisteredUser, type Response, type TestContext } from './support/app.js';
import { expectError } from './support/expect.js';

// Addresses are compared as stored: trimmed, ASCII letters lower-cased, nothing else folded. An
// address holding a character that Unicode case folding or NFKC turns into ASCII is malformed:
// a 422 on its field wherever a request sends one, never another spelling of an account's.

const LOOKALIKE =
  'must not hold characters that Unicode case folding or NFKC turn into ASCII (the Kelvin sign, the long s, fullwidth letters): write the address in ASCII';

let t: TestContext;
let kate: RegisteredUser;
let admin: string;
beforeAll(async () => {
  t = await startTestApp();
  kate = await t.register({ email: uniqueEmail('kate') });
  admin = await t.adminToken();
});
afterAll(() => t?.close());

/** Kate's address with its first letter as the Kelvin sign (U+212A, lower-cased `k`). */
const kelvin = () => `\u212A${kate.email.slice(1)}`;
/** Kate's address spelled four ways that fold onto it: the Kelvin sign, upper-cased too, a fullwidth `k`, the `fi` ligature. */
const spellings = () => [kelvin(), kelvin().toUpperCase(), `\uFF4B${kate.email.slice(1)}`, kate.email.replace('example', 'exam\uFB01e')];

function expectMalformed(res: Response, field: string, message?: string) {
  expectError(res, 422, 'VALIDATION_ERROR');
  expect(res.body.error.details).toEqual([{ field, message: message ?? expect.any(String) }]);
}

it('refuses registration with a Kelvin-sign address with 422 on body.email, and makes no account', async () => {
  for (const email of spellings()) {
    expectMalformed(await t.post('/api/auth/register', { email, password: 'a-long-password-1', name: 'Kelvin' }), 'body.email');
  }
  const rows = await t.db
    .selectFrom('users')
    .select('email')
    .where('email', 'like', `%${kate.email.slice(1)}`)
    .execute();
  expect(rows).toEqual([{ email: kate.email }]);
});

it('refuses a sign-in with a Kelvin-sign spelling of an account with 422, even with its right password', async () => {
  for (const email of spellings()) {
    expectMalformed(await t.post('/api/auth/login/json', { email, password: kate.password }), 'body.email', LOOKALIKE);
    expectMalformed(
      await t.post('/api/auth/login', { username: email, password: kate.password }, { form: true }),
      'body.username',
      LOOKALIKE,
    );
  }
  // The ASCII spelling, upper-cased, is the same account.
  expect((await t.post('/api/auth/login/json', { email: kate.email.toUpperCase(), password: kate.password })).status).toBe(200);
});

it('refuses the lookalike in every other request that names an address', async () => {
  const email = kelvin();
  expectMalformed(await t.post('/api/auth/forgot-password', { email }), 'body.email');
  expectMalformed(await t.post('/api/auth/email-code', { email }), 'body.email');
  expectMalformed(await t.post('/api/auth/email-code/verify', { email, code: '123456' }), 'body.email', LOOKALIKE);
  expectMalformed(await t.post('/api/users', { email, password: 'a-long-password-1', name: 'Kelvin' }, { token: admin }), 'body.email');
  const other = await t.register();
  expectMalformed(await t.put(`/api/users/${other.id}`, { email }, { token: admin }), 'body.email');
  expect(await t.db.selectFrom('users').select('email').where('id', '=', other.id).executeTakeFirstOrThrow()).toEqual({
    email: other.email,
  });
});
