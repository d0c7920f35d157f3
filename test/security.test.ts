import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { dictionary } from '@zxcvbn-ts/language-common';
import jwt from 'jsonwebtoken';
import { sql } from 'kysely';
import request from 'supertest';
import { createApp, type App } from '../src/app.js';
import { insertAccountToken } from '../src/users/account-token-repository.js';
import { createLogger } from '../src/logger.js';
import { COMMON_PASSWORDS, isCommonPassword } from '../src/passwords/passwords.js';
import { deriveKey, unseal } from '../src/infra/sealed.js';
import { sha256 } from '../src/sessions/tokens.js';
import { ADMIN, startTestApp, TEST_SECRET, uniqueEmail, type Response, type TestContext } from './support/app.js';
import { expectError, expectJson, expectUnauthorized } from './support/expect.js';
import { claimsOf, type Claims } from './support/jwt.js';
import { freePort } from './support/net.js';
import { until } from './support/wait.js';

// Security hardening: common and e-mail-equal passwords, response headers and the CSP, CORS,
// body limits, secrets kept out of the log, and JWTs that try to choose their own key or algorithm.

let t: TestContext;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

// ---------------------------------------------------------------------------------------------
// Helpers

const b64url = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
const me = (token: string) => t.get('/api/auth/me', { token });
const strongPassword = () => `pw-${randomBytes(9).toString('base64url')}`;

/** A 422 with exactly one detail, on `field`, whose message matches `message`. */
function expectRefused(res: Response, field: string, message: RegExp): void {
  expectError(res, 422, 'VALIDATION_ERROR');
  expect(res.body.error.details).toEqual([{ field, message: expect.stringMatching(message) }]);
}

const TOO_COMMON = /too common/;
const SAME_AS_EMAIL = /e-mail/;

/** A raw reset token for `user`, stored the way the service stores one (its SHA-256). */
async function resetTokenFor(user: { id: number; email: string }): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  await insertAccountToken(t.db, {
    userId: user.id,
    purpose: 'password_reset',
    tokenHash: sha256(token),
    email: user.email,
    expiresAt: new Date(Date.now() + 30 * 60_000),
  });
  return token;
}

// ---------------------------------------------------------------------------------------------

describe('the common-password list', () => {
  it('holds at least 10,000 lower-cased entries of 8 or more characters, from the bundled list', () => {
    expect(COMMON_PASSWORDS.size).toBeGreaterThanOrEqual(10_000);
    // One assertion over the whole list: an expect per entry took most of a second.
    expect([...COMMON_PASSWORDS].filter((entry) => entry.length < 8 || entry !== entry.toLowerCase())).toEqual([]);
    const source = dictionary['passwords-common'];
    expect(source.length).toBeGreaterThan(40_000);
    // The most common entries long enough to pass the length rule are all in.
    const top = source.filter((entry) => entry.length >= 8).slice(0, 100);
    for (const entry of top) expect(COMMON_PASSWORDS.has(entry)).toBe(true);
  });

  it('matches whatever the case and surrounding spaces; passphrases used in examples are not on it', () => {
    for (const password of ['password', 'PASSWORD', 'Password1', 'iloveyou', 'SunShine', 'qwertyuiop', ' football ']) {
      expect(isCommonPassword(password)).toBe(true);
    }
    for (const password of ['correct-horse-battery', 'another-long-passphrase', 'password-123', 'admin-password-1']) {
      expect(isCommonPassword(password)).toBe(false);
    }
  });
});

describe('common passwords are refused wherever a password is set', () => {
  const COMMON = ['password1', 'ILoveYou', 'Sunshine', 'qwertyuiop', 'football'];

  it('POST /api/auth/register → 422 on body.password, and no account is created', async () => {
    for (const password of COMMON) {
      const email = uniqueEmail('common');
      expectRefused(await t.post('/api/auth/register', { email, password, name: 'Common' }), 'body.password', TOO_COMMON);
      const row = await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst();
      expect(row).toBeUndefined();
    }
  });

  it('POST /api/users → 422 on body.password', async () => {
    const admin = await t.adminToken();
    const res = await t.post('/api/users', { name: 'Common', email: uniqueEmail('common'), password: 'Password1' }, { token: admin });
    expectRefused(res, 'body.password', TOO_COMMON);
  });

  it('PUT /api/users/{id} → 422 on body.password, by the user and by an admin; the password stays', async () => {
    const u = await t.register();
    expectRefused(
      await t.put(`/api/users/${u.id}`, { password: 'iloveyou', current_password: u.password }, { token: u.access }),
      'body.password',
      TOO_COMMON,
    );
    const admin = await t.adminToken();
    expectRefused(
      await t.put(`/api/users/${u.id}`, { password: 'QWERTYUIOP', name: 'Renamed' }, { token: admin }),
      'body.password',
      TOO_COMMON,
    );
    expect((await t.post('/api/auth/login/json', { email: u.email, password: u.password })).status).toBe(200);
    expect((await t.get(`/api/users/${u.id}`, { token: admin })).body.data.name).toBe(u.name);
  });

  it('POST /api/auth/change-password → 422 on body.new_password; the old password still works', async () => {
    const u = await t.register();
    const res = await t.post('/api/auth/change-password', { current_password: u.password, new_password: 'sunshine' }, { token: u.access });
    expectRefused(res, 'body.new_password', TOO_COMMON);
    expect((await t.post('/api/auth/login/json', { email: u.email, password: u.password })).status).toBe(200);
  });

  it('POST /api/auth/reset-password → 422 on body.new_password; the token stays usable', async () => {
    const u = await t.register();
    const token = await resetTokenFor(u);
    expectRefused(await t.post('/api/auth/reset-password', { token, new_password: 'Football' }), 'body.new_password', TOO_COMMON);
    const fresh = strongPassword();
    expect((await t.post('/api/auth/reset-password', { token, new_password: fresh })).status).toBe(200);
    expect((await t.post('/api/auth/login/json', { email: u.email, password: fresh })).status).toBe(200);
  });
});

describe('a password equal to the account e-mail is refused', () => {
  it('POST /api/auth/register, whatever the case and surrounding spaces', async () => {
    const email = uniqueEmail('same');
    for (const password of [email, email.toUpperCase(), `  ${email} `]) {
      expectRefused(await t.post('/api/auth/register', { email, password, name: 'Same' }), 'body.password', SAME_AS_EMAIL);
    }
    expectRefused(
      await t.post('/api/auth/register', { email: `  ${email.toUpperCase()}`, password: email, name: 'Same' }),
      'body.password',
      SAME_AS_EMAIL,
    );
  });

  it('POST /api/users', async () => {
    const admin = await t.adminToken();
    const email = uniqueEmail('same');
    expectRefused(
      await t.post('/api/users', { name: 'Same', email, password: email.toUpperCase() }, { token: admin }),
      'body.password',
      SAME_AS_EMAIL,
    );
  });

  it('PUT /api/users/{id}: the current e-mail, or the new one when the e-mail changes too', async () => {
    const u = await t.register();
    expectRefused(
      await t.put(`/api/users/${u.id}`, { password: u.email, current_password: u.password }, { token: u.access }),
      'body.password',
      SAME_AS_EMAIL,
    );
    const next = uniqueEmail('next');
    expectRefused(
      await t.put(`/api/users/${u.id}`, { email: next, password: next.toUpperCase(), current_password: u.password }, { token: u.access }),
      'body.password',
      SAME_AS_EMAIL,
    );
    const admin = await t.adminToken();
    expectRefused(
      await t.put(`/api/users/${u.id}`, { password: ` ${u.email.toUpperCase()} ` }, { token: admin }),
      'body.password',
      SAME_AS_EMAIL,
    );
    // Nothing changed.
    const row = await t.db.selectFrom('users').select('email').where('id', '=', u.id).executeTakeFirstOrThrow();
    expect(row.email).toBe(u.email);
    expect((await t.post('/api/auth/login/json', { email: u.email, password: u.password })).status).toBe(200);
  });

  it('POST /api/auth/change-password', async () => {
    const u = await t.register();
    const res = await t.post(
      '/api/auth/change-password',
      { current_password: u.password, new_password: u.email.toUpperCase() },
      { token: u.access },
    );
    expectRefused(res, 'body.new_password', SAME_AS_EMAIL);
  });

  it('POST /api/auth/reset-password, and the token stays usable', async () => {
    const u = await t.register();
    const token = await resetTokenFor(u);
    expectRefused(await t.post('/api/auth/reset-password', { token, new_password: u.email }), 'body.new_password', SAME_AS_EMAIL);
    expect((await t.post('/api/auth/reset-password', { token, new_password: strongPassword() })).status).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------

/** The directives of a Content-Security-Policy header, by name. */
function directives(header: string | undefined): Map<string, string[]> {
  expect(typeof header).toBe('string');
  return new Map(
    header!
      .split(';')
      .map((part) => part.trim().split(/\s+/))
      .filter((words) => words[0])
      .map(([name, ...values]) => [name.toLowerCase(), values]),
  );
}

function expectSecurityHeaders(res: { headers: Record<string, string> }): Map<string, string[]> {
  expect(res.headers['x-powered-by']).toBeUndefined();
  expect(res.headers['x-content-type-options']).toBe('nosniff');
  expect(res.headers['x-frame-options']).toBe('DENY');
  expect(res.headers['referrer-policy']).toBe('no-referrer');
  expect(res.headers['strict-transport-security']).toMatch(/max-age=\d+/);
  expect(res.headers['cross-origin-opener-policy']).toBe('same-origin');
  const csp = directives(res.headers['content-security-policy']);
  expect(csp.get('default-src')).toEqual(["'self'"]);
  expect(csp.get('frame-ancestors')).toEqual(["'none'"]);
  expect(csp.get('object-src')).toEqual(["'none'"]);
  expect(csp.get('script-src')).toEqual(["'self'"]);
  expect(csp.get('connect-src')).toEqual(["'self'"]);
  expect(csp.get('img-src')).toEqual(["'self'", 'data:', 'blob:']);
  expect(csp.has('upgrade-insecure-requests')).toBe(false);
  expect(res.headers['content-security-policy']).not.toMatch(/https?:|unsafe-eval|\*/);
  return csp;
}

describe('security headers', () => {
  it('are on API responses: success, errors, unknown routes and preflight fallbacks', async () => {
    const u = await t.register();
    const responses = [
      await t.get('/health'),
      await me(u.access),
      await t.get('/api/auth/me'),
      await t.get('/no/such/route'),
      await t.post('/api/auth/register', { email: 'bad' }),
      await t.send('PATCH', '/api/auth/me'),
      await t.send('OPTIONS', '/api/auth/me'),
    ];
    expect(responses.map((res) => res.status)).toEqual([200, 200, 401, 404, 422, 405, 204]);
    for (const res of responses) expectSecurityHeaders(res);
  });

  it('are on the documentation, whose policy lets Swagger UI and ReDoc run from this origin only', async () => {
    for (const path of [
      '/docs',
      '/redoc',
      '/openapi.json',
      '/docs/swagger-ui-bundle.js',
      '/docs/swagger-init.js',
      '/redoc/redoc.standalone.js',
    ]) {
      const res = await request(t.app.koa.callback()).get(path);
      expect(res.status).toBe(200);
      const csp = expectSecurityHeaders(res);
      // ReDoc injects <style> elements and starts a worker from a blob: URL.
      expect(csp.get('style-src')).toEqual(["'self'", "'unsafe-inline'"]);
      expect(csp.get('worker-src')).toEqual(["'self'", 'blob:']);
    }
    // One policy, not a second one added by the page.
    const redoc = await request(t.app.koa.callback()).get('/redoc');
    expect(redoc.headers['content-security-policy']).not.toContain(',');
    expect(redoc.text).toContain('/redoc/redoc.standalone.js');
  });
});

// ---------------------------------------------------------------------------------------------

describe('CORS', () => {
  const ALLOWED = 'https://app.example.com';
  const OTHER = 'http://localhost:3000';
  let c: TestContext;
  beforeAll(async () => {
    c = await startTestApp({ CORS_ORIGINS: `${ALLOWED}, ${OTHER}/`, MAX_BODY_BYTES: '1024' });
  });
  afterAll(() => c?.close());

  const corsHeaders = (res: Response) => Object.keys(res.headers).filter((name) => name.startsWith('access-control-'));

  it('echoes an allowed origin, without credentials, and exposes the headers clients read', async () => {
    for (const origin of [ALLOWED, OTHER]) {
      const res = await c.get('/health', { headers: { Origin: origin } });
      expect(res.status).toBe(200);
      expect(res.headers['access-control-allow-origin']).toBe(origin);
      expect(res.headers['access-control-allow-credentials']).toBeUndefined();
      expect(res.headers.vary).toMatch(/\bOrigin\b/);
      const exposed = res.headers['access-control-expose-headers'].split(',').map((name) => name.trim().toLowerCase());
      expect(exposed).toEqual(
        expect.arrayContaining([
          'x-request-id',
          'retry-after',
          'ratelimit-limit',
          'ratelimit-remaining',
          'ratelimit-reset',
          'www-authenticate',
        ]),
      );
      expectSecurityHeaders(res);
    }
  });

  it('keeps the CORS headers on error responses, so a browser client can read them', async () => {
    const res = await c.get('/api/auth/me', { headers: { Origin: ALLOWED } });
    expect(res.status).toBe(401);
    expect(res.headers['access-control-allow-origin']).toBe(ALLOWED);
  });

  it('answers a preflight from an allowed origin with 204 and the methods and headers allowed', async () => {
    const res = await c.send('OPTIONS', '/api/auth/me', undefined, {
      headers: { Origin: ALLOWED, 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'authorization, content-type' },
    });
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe(ALLOWED);
    expect(res.headers['access-control-allow-methods']).toMatch(/\bGET\b/);
    expect(res.headers['access-control-allow-methods']).toMatch(/\bPUT\b/);
    expect(res.headers['access-control-allow-headers'].toLowerCase()).toMatch(/\bauthorization\b/);
    expect(res.headers['access-control-allow-headers'].toLowerCase()).toMatch(/\bcontent-type\b/);
    expect(Number(res.headers['access-control-max-age'])).toBeGreaterThan(0);
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
  });

  it('gives another origin no Access-Control-Allow-Origin, on requests and preflights', async () => {
    const res = await c.get('/health', { headers: { Origin: 'https://evil.example.com' } });
    expect(res.status).toBe(200);
    expect(corsHeaders(res)).toEqual([]);
    const preflight = await c.send('OPTIONS', '/api/auth/me', undefined, {
      headers: { Origin: 'https://evil.example.com', 'Access-Control-Request-Method': 'GET' },
    });
    expect(corsHeaders(preflight)).toEqual([]);
    // A near miss is another origin too.
    const near = await c.get('/health', { headers: { Origin: 'https://app.example.com.evil.example' } });
    expect(near.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('leaves a plain OPTIONS request to the 204 + Allow answer', async () => {
    const res = await c.send('OPTIONS', '/api/auth/me');
    expect(res.status).toBe(204);
    expect(res.headers.allow.split(', ').sort()).toEqual(['GET', 'HEAD']);
    expect(corsHeaders(res)).toEqual([]);
  });

  it('is off without CORS_ORIGINS: no CORS header at all, and OPTIONS still answers 204 + Allow', async () => {
    const res = await t.get('/health', { headers: { Origin: ALLOWED } });
    expect(res.status).toBe(200);
    expect(corsHeaders(res)).toEqual([]);
    const preflight = await t.send('OPTIONS', '/api/users', undefined, {
      headers: { Origin: ALLOWED, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.allow.split(', ').sort()).toEqual(['GET', 'HEAD', 'POST']);
    expect(corsHeaders(preflight)).toEqual([]);
  });

  describe('request bodies (MAX_BODY_BYTES=1024)', () => {
    it('a JSON body over the limit is 413 PAYLOAD_TOO_LARGE; one under it reaches validation', async () => {
      const over = await c.post('/api/auth/register', { email: uniqueEmail(), password: strongPassword(), name: 'n'.repeat(1100) });
      expectError(over, 413, 'PAYLOAD_TOO_LARGE');
      const under = await c.post('/api/auth/register', { email: uniqueEmail(), password: strongPassword(), name: 'n'.repeat(900) });
      expectError(under, 422, 'VALIDATION_ERROR');
    });

    it('a form body over the limit is 413 too', async () => {
      const res = await c.post('/api/auth/login', { username: 'a@example.com', password: 'p'.repeat(2000) }, { form: true });
      expectError(res, 413, 'PAYLOAD_TOO_LARGE');
    });

    it('an unsupported content type is a 4xx in the envelope', async () => {
      for (const type of ['text/plain', 'application/xml', 'multipart/form-data; boundary=x']) {
        const res = await c.post('/api/auth/register', undefined, {
          headers: { 'Content-Type': type },
          raw: '<register email="a@example.com" password="correct-horse-battery"/>',
        });
        expect(res.status).toBeGreaterThanOrEqual(400);
        expect(res.status).toBeLessThan(500);
        expect(res.body).toEqual({ success: false, error: { code: expect.any(String), message: expect.any(String) } });
        expectJson(res);
      }
    });
  });
});

// ---------------------------------------------------------------------------------------------

describe('logs never hold a password, a token or a hash', () => {
  it('at debug level, through registration, logins, refresh, password change and reset, mail failures and database errors', async () => {
    const port = await freePort();
    const base = await startTestApp({ LOG_LEVEL: 'debug', SMTP_URL: `smtp://127.0.0.1:${port}`, MAIL_POLL_INTERVAL_MS: '100' });
    // The harness app logs nowhere: stop it and run one on the same database and configuration,
    // with the service's own logger writing every line here.
    await base.stop();
    let log = '';
    const logger = createLogger(base.config.logging, { write: (line: string) => void (log += line) });
    let app: App | undefined;
    try {
      app = await createApp(base.config, { logger });
      const db = app.db;
      const http = () => request(app!.koa.callback());
      const lines = () =>
        log
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as Record<string, unknown>);
      const secrets: string[] = [];
      const keep = (...values: string[]) => {
        // A JWT's signature alone is a secret too (bcrypt hashes hold dots as well: only JWTs are split).
        for (const value of values)
          secrets.push(value, ...(value.startsWith('eyJ') && value.split('.').length === 3 ? [value.split('.')[2]] : []));
      };

      const email = uniqueEmail('logs');
      const [first, second, third, wrong, failedUpdate, failedRegister] = Array.from({ length: 6 }, strongPassword);
      keep(first, second, third, wrong, failedUpdate, failedRegister);

      const registered = await http().post('/api/auth/register').send({ email, password: first, name: 'Log Test' });
      expect(registered.status).toBe(201);
      const userId: number = registered.body.data.user.id;
      keep(registered.body.data.access_token, registered.body.data.refresh_token);

      const form = await http()
        .post('/api/auth/login')
        .type('form')
        .send({ username: email, password: first, grant_type: 'password', client_secret: 'a-client-secret' });
      expect(form.status).toBe(200);
      keep(form.body.access_token, form.body.refresh_token, 'a-client-secret');

      const json = await http().post('/api/auth/login/json').send({ email, password: first });
      expect(json.status).toBe(200);
      const access: string = json.body.data.access_token;
      keep(access, json.body.data.refresh_token);

      expect((await http().post('/api/auth/login/json').send({ email, password: wrong })).status).toBe(401);
      expect((await http().get('/api/auth/me').set('Authorization', `Bearer ${access}`)).status).toBe(200);
      const forged = jwt.sign(
        { sub: String(userId), type: 'access', sid: randomUUID(), jti: randomUUID() },
        'not-the-secret-key-but-long-enough-0123456789',
        { expiresIn: 60 },
      );
      keep(forged);
      expect((await http().get('/api/auth/me').set('Authorization', `Bearer ${forged}`)).status).toBe(401);

      const refreshed = await http().post('/api/auth/refresh').send({ refresh_token: json.body.data.refresh_token });
      expect(refreshed.status).toBe(200);
      keep(refreshed.body.data.access_token, refreshed.body.data.refresh_token);

      const changed = await http()
        .post('/api/auth/change-password')
        .set('Authorization', `Bearer ${refreshed.body.data.access_token}`)
        .send({ current_password: first, new_password: second });
      expect(changed.status).toBe(200);
      // Malformed JSON carrying a password: a 400 whose parser error holds the raw body.
      const malformed = await http()
        .post('/api/auth/login/json')
        .set('Content-Type', 'application/json')
        .send(`{"email": "${email}", "password": "${second}"`);
      expect(malformed.status).toBe(400);

      // A reset link goes to an SMTP server that is not there: delivery fails and is logged.
      expect((await http().post('/api/auth/forgot-password').send({ email })).status).toBe(200);
      const mailKey = deriveKey(base.config.secret.key, 'mail-outbox');
      // The link is queued after the answer: wait for its row.
      await app.services.account.settled();
      const mails = await db.selectFrom('mail_outbox').select(['subject', 'payload']).where('recipient', '=', email).execute();
      // The verification link from registration, the notice of the password change, and the reset link.
      expect(mails.length).toBe(3);
      const links = mails.flatMap((mail) => (JSON.parse(unseal(mailKey, mail.payload!)!) as { link?: string }).link ?? []);
      const tokens = links.map((link) => new URL(link).searchParams.get('token')!);
      keep(...tokens, ...tokens.map(sha256));
      const resetToken = tokens[links.findIndex((link) => link.includes('/reset-password'))];

      const reset = await http().post('/api/auth/reset-password').send({ token: resetToken, new_password: third });
      expect(reset.status).toBe(200);

      // Database errors: every write to users fails, and the error (its parameters, and a
      // "Failing row contains (...)" detail quoting the hash) goes to the log as a 500's cause.
      const relogin = await http().post('/api/auth/login/json').send({ email, password: third });
      expect(relogin.status).toBe(200);
      keep(relogin.body.data.access_token, relogin.body.data.refresh_token);
      await sql`alter table users add constraint security_test_no_writes check (false) not valid`.execute(db);
      try {
        const update = await http()
          .put(`/api/users/${userId}`)
          .set('Authorization', `Bearer ${relogin.body.data.access_token}`)
          .send({ password: failedUpdate, current_password: third });
        expect(update.status).toBe(500);
        expect(update.body).toEqual({ success: false, error: { code: 'INTERNAL_ERROR', message: 'Internal server error' } });
        const insert = await http()
          .post('/api/auth/register')
          .send({ email: uniqueEmail('logs'), password: failedRegister, name: 'Log Test' });
        expect(insert.status).toBe(500);
      } finally {
        await sql`alter table users drop constraint security_test_no_writes`.execute(db);
      }

      // Wait for both failed deliveries to be logged.
      await until(
        () => lines().filter((line) => line.msg === 'mail outbox: delivery failed').length >= 2,
        'two failed deliveries logged',
        15_000,
        50,
      );

      // Everything secret the database holds about this run.
      const users = await db.selectFrom('users').select('password_hash').execute();
      const sessions = await db
        .selectFrom('sessions')
        .select(['refresh_token_hash', 'previous_token_hash', 'grace_token_hashes', 'refresh_token_sealed'])
        .execute();
      const accountTokens = await db.selectFrom('account_tokens').select('token_hash').execute();
      keep(...users.map((row) => row.password_hash));
      for (const row of sessions) {
        keep(
          ...[row.refresh_token_hash, row.previous_token_hash, ...row.grace_token_hashes, row.refresh_token_sealed].filter(
            (hash): hash is string => Boolean(hash),
          ),
        );
      }
      keep(...accountTokens.map((row) => row.token_hash));

      // The log did record the run: requests, mail failures, and the 500s with their causes.
      const all = lines();
      const operations = new Set(all.filter((line) => line.msg === 'request').map((line) => line.operationId));
      for (const operation of [
        'register',
        'login',
        'loginJson',
        'getMe',
        'refreshToken',
        'changePassword',
        'forgotPassword',
        'resetPassword',
        'updateUser',
      ]) {
        expect([operation, operations.has(operation)]).toEqual([operation, true]);
      }
      expect(all.filter((line) => line.msg === 'mail outbox: delivery failed').length).toBeGreaterThanOrEqual(2);
      const failures = all.filter((line) => line.level === 50 && (line.err as { code?: string } | undefined)?.code === '23514');
      expect(failures.length).toBe(2);
      for (const failure of failures) expect(failure.err).toMatchObject({ message: expect.stringContaining('security_test_no_writes') });
      expect(all.some((line) => line.level === 20)).toBe(true); // debug lines were written

      expect(secrets.length).toBeGreaterThan(20);
      for (const secret of secrets) {
        expect(secret.length).toBeGreaterThanOrEqual(8);
        if (log.includes(secret)) throw new Error(`the log holds a secret: ${secret}`);
      }
      expect(log).not.toMatch(/\$2[aby]\$\d\d\$/); // no bcrypt hash, stored or not
      expect(log).not.toContain('reset-password?token=');
      expect(log).not.toContain('verify-email?token=');
    } finally {
      await app?.close();
      await base.close();
    }
  }, 120_000);
});

// ---------------------------------------------------------------------------------------------

describe('JWTs that try to choose their own key or algorithm', () => {
  const ATTACKER_SECRET = 'attacker-secret-that-is-also-long-enough-0123';
  let u: Awaited<ReturnType<TestContext['register']>>;
  let claims: Claims;
  beforeAll(async () => {
    u = await t.register();
    claims = claimsOf(u.access);
  });

  const KEY_HEADERS: Record<string, Record<string, unknown>> = {
    kid: { kid: 'attacker-key' },
    'kid (path traversal)': { kid: '../../../../../../dev/null' },
    jku: { jku: 'https://attacker.example/.well-known/jwks.json', kid: 'attacker-key' },
    x5u: { x5u: 'https://attacker.example/cert.pem' },
    jwk: { jwk: { kty: 'oct', k: Buffer.from(ATTACKER_SECRET).toString('base64url'), alg: 'HS256' } },
    x5c: { x5c: ['MIIBszCCAVmgAwIBAgIUattacker'] },
  };

  it.each(Object.entries(KEY_HEADERS))('with a %s header, signed with another key → 401', async (_name, header) => {
    const token = jwt.sign({ ...claims, jti: randomUUID() }, ATTACKER_SECRET, { algorithm: 'HS256', header: { alg: 'HS256', ...header } });
    expectUnauthorized(await me(token));
  });

  it.each(Object.entries(KEY_HEADERS))(
    'with a %s header, signed with the configured secret → accepted (the header is ignored)',
    async (_name, header) => {
      // The access token's own `typ`, so that only the key headers differ from a real one.
      const token = jwt.sign({ ...claims, jti: randomUUID() }, TEST_SECRET, {
        algorithm: 'HS256',
        header: { alg: 'HS256', typ: 'access+jwt', ...header },
      });
      const res = await me(token);
      expect(res.status).toBe(200);
      expect(res.body.data.id).toBe(u.id);
    },
  );

  it('an RS256 token, even with its public key embedded as jwk → 401', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const jwk = publicKey.export({ format: 'jwk' });
    for (const header of [{}, { jwk }, { kid: 'attacker-key', jku: 'https://attacker.example/jwks.json' }]) {
      const token = jwt.sign({ ...claims, jti: randomUUID() }, privateKey, { algorithm: 'RS256', header: { alg: 'RS256', ...header } });
      expectUnauthorized(await me(token));
    }
  });

  it('an HS256 token whose header claims RS256, signed with the secret → 401', async () => {
    const [, payload] = u.access.split('.');
    const header = b64url({ alg: 'RS256', typ: 'JWT' });
    const token = `${header}.${payload}.${u.access.split('.')[2]}`;
    expectUnauthorized(await me(token));
  });

  it('HS384 and HS512 tokens signed with the configured secret → 401 (the algorithm is pinned)', async () => {
    for (const algorithm of ['HS384', 'HS512'] as const) {
      const token = jwt.sign({ ...claims, jti: randomUUID() }, TEST_SECRET, { algorithm });
      expectUnauthorized(await me(token));
    }
  });

  it('unsigned tokens (alg none, any spelling) → 401', async () => {
    for (const alg of ['none', 'None', 'NONE', 'nOnE']) {
      const unsigned = `${b64url({ alg, typ: 'JWT' })}.${b64url({ ...claims, jti: randomUUID() })}`;
      expectUnauthorized(await me(`${unsigned}.`));
      expectUnauthorized(await me(`${unsigned}.${u.access.split('.')[2]}`));
    }
  });

  it('a token without exp, signed with the configured secret → 401', async () => {
    const { exp: _exp, ...rest } = claims;
    const token = jwt.sign({ ...rest, jti: randomUUID() }, TEST_SECRET, { algorithm: 'HS256' });
    expect(claimsOf(token).exp).toBeUndefined();
    expectUnauthorized(await me(token));
    const refreshClaims = claimsOf(u.refresh);
    const { exp: _rexp, ...refreshRest } = refreshClaims;
    const refresh = jwt.sign({ ...refreshRest, jti: randomUUID() }, TEST_SECRET, { algorithm: 'HS256' });
    expectUnauthorized(await t.post('/api/auth/refresh', { refresh_token: refresh }));
  });

  it('a token of the wrong type → 401: refresh as access, access as refresh, or another type', async () => {
    expectUnauthorized(await me(u.refresh));
    expectUnauthorized(await t.post('/api/auth/refresh', { refresh_token: u.access }));
    for (const type of ['admin', 'ACCESS', 'id', '', null, undefined]) {
      const token = jwt.sign({ ...claims, type, jti: randomUUID() }, TEST_SECRET, { algorithm: 'HS256' });
      expectUnauthorized(await me(token));
    }
    const { type: _type, ...untyped } = claims;
    expectUnauthorized(await me(jwt.sign({ ...untyped, jti: randomUUID() }, TEST_SECRET, { algorithm: 'HS256' })));
    // The genuine token still works.
    expect((await me(u.access)).status).toBe(200);
  });

  it('the admin role is not taken from a claim', async () => {
    const token = jwt.sign({ ...claims, role: 'admin', is_admin: true, jti: randomUUID() }, TEST_SECRET, {
      algorithm: 'HS256',
      header: { alg: 'HS256', typ: 'access+jwt' },
    });
    expect((await me(token)).status).toBe(200);
    expectError(await t.get('/api/users', { token }), 403, 'FORBIDDEN');
    expect(ADMIN.email).not.toBe(u.email);
  });
});
