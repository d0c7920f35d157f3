import { createHash } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import request from 'supertest';
import { createApp, type App } from '../src/app.js';
import { createLogger } from '../src/logger.js';
import { outboxDrained } from './support/outbox.js';
import { startTestApp, uniqueEmail, type Response, type TestContext } from './support/app.js';
import { auditRows } from './support/audit.js';
import { expectError } from './support/expect.js';
import { claimsOf } from './support/jwt.js';
import { captureLog } from './support/log.js';
import { linkToken, startSmtpServer, type ReceivedMail, type TestSmtpServer } from './support/smtp.js';

// Signing in with an e-mailed code or link, against a real SMTP sink: what the mail says, each half
// used once and voiding the other, expiry, wrong codes and the lockout, the per-address cooldown,
// the second factor, disabled accounts, sign-up, the switch, and that nothing tells addresses apart.
const APP_URL = 'https://app.example.test';
const SIGN_IN_SUBJECT = 'Your sign-in code';
const SIGNUP_SUBJECT = 'Your code to create your account';
const ACCEPTED = { success: true, data: { message: 'If the address can sign in, a code has been sent to it' } };

let smtp: TestSmtpServer;
let t: TestContext;
beforeAll(async () => {
  smtp = await startSmtpServer();
  t = await startTestApp({
    SMTP_URL: smtp.url,
    APP_URL,
    MAIL_POLL_INTERVAL_MS: '100',
    AUTH_REDIRECT_URLS: `${APP_URL}/*,https://other.example.test/welcome`,
    // The lockout is on; the per-IP budget is out of the way of a suite that sends from one address.
    RATE_LIMIT_ENABLED: 'true',
    AUTH_RATE_LIMIT_PER_MINUTE: '100000',
    RATE_LIMIT_PER_MINUTE: '100000',
    LOGIN_MAX_FAILURES: '8',
  });
});
afterAll(async () => {
  await t?.close();
  await smtp?.close();
});

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');
const ask = (app: TestContext, body: Record<string, unknown>) => app.post('/api/auth/email-code', body);
const verify = (app: TestContext, body: Record<string, unknown>) => app.post('/api/auth/email-code/verify', body);

/** Every request answered so far has done its work, and every mail it queued has gone out. */
async function quiet(app: TestContext, email: string): Promise<void> {
  await app.app.services.emailCode.settled();
  await outboxDrained(app.db, email);
}

const codeMails = (email: string) => smtp.to(email).filter((m) => m.subject === SIGN_IN_SUBJECT || m.subject === SIGNUP_SUBJECT);

/** Asks for a code for `email` and returns the mail that brings it. */
async function mailFor(app: TestContext, email: string, extra: Record<string, unknown> = {}): Promise<ReceivedMail> {
  const before = codeMails(email).length;
  const res = await ask(app, { email, ...extra });
  expect(res.status).toBe(202);
  expect(res.body).toEqual(ACCEPTED);
  await quiet(app, email);
  const mails = codeMails(email);
  expect(mails).toHaveLength(before + 1);
  return mails[mails.length - 1];
}

function codeIn(mail: ReceivedMail): string {
  const match = /^ {4}(\d{6})$/m.exec(mail.text);
  if (!match) throw new Error(`no code in:\n${mail.text}`);
  return match[1];
}

const codeRows = (app: TestContext, email: string) =>
  app.db.selectFrom('email_codes').selectAll().where('email', '=', email).orderBy('id').execute();

/** Moves every code of the address back in time, as if sent that long ago. */
const age = (app: TestContext, email: string, seconds: number) =>
  app.db
    .updateTable('email_codes')
    .set({ created_at: new Date(Date.now() - seconds * 1000) })
    .where('email', '=', email)
    .execute();

function expectSignedIn(res: Response, email: string): void {
  expect(res.status).toBe(200);
  expect(res.body.success).toBe(true);
  expect(res.body.data).toEqual({
    access_token: expect.any(String),
    refresh_token: expect.any(String),
    token_type: 'bearer',
    expires_in: 1800,
    user: expect.objectContaining({ email, email_verified: true }),
  });
}

const wrong = (code: string) => (code === '000000' ? '111111' : '000000');

describe('the mail', () => {
  it('carries the code and the link, in text and HTML, in the style of the other mails; only digests are stored', async () => {
    const user = await t.register({ name: 'Ada <b>Lovelace</b>' });
    const mail = await mailFor(t, user.email);
    expect(mail.to).toEqual([user.email]);
    expect(mail.subject).toBe(SIGN_IN_SUBJECT);
    const code = codeIn(mail);
    const token = linkToken(mail, 'sign-in');
    const link = `${APP_URL}/sign-in?token=${token}`;

    expect(mail.text).toContain('Hello Ada <b>Lovelace</b>,');
    expect(mail.text).toContain(`\n\n    ${code}\n\n`);
    expect(mail.text).toContain(`Or open this link:\n${link}`);
    expect(mail.text).toContain('The code and the link work once, and using one voids the other. Both expire in 10 minutes.');
    // The HTML part shows the code on its own, large, unbroken (it copies whole), and the same link.
    expect(mail.html).toContain('Hello Ada &#60;b&#62;Lovelace&#60;/b&#62;,');
    expect(mail.html).not.toContain('<b>Lovelace');
    expect(mail.html).toMatch(new RegExp(`<p style="[^"]*font-size: 32px[^"]*">${code}</p>`));
    expect(mail.html).toContain(`<a href="${link}">Sign me in</a>`);
    expect(mail.html).toContain('Both expire in 10 minutes.');

    const [row] = await codeRows(t, user.email);
    expect(row).toMatchObject({ user_id: user.id, failures: 0, used_at: null, token_hash: sha256(token) });
    expect(row.code_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row.code_hash).not.toBe(sha256(code));
    expect(row.code_hash).not.toBe(sha256(`${user.email}\n${code}`));
    expect(JSON.stringify(row)).not.toContain(token);
    expect(row.expires_at.getTime() - row.created_at.getTime()).toBeGreaterThan(9.9 * 60_000);
    expect(row.expires_at.getTime() - row.created_at.getTime()).toBeLessThan(10.1 * 60_000);
    expect(await auditRows(t, user.id, 'email_code.requested')).toHaveLength(1);
  });

  it('links to redirect_to when the allow-list has it, and refuses any other address without sending', async () => {
    const user = await t.register();
    const mail = await mailFor(t, user.email, { redirect_to: 'https://other.example.test/welcome' });
    const token = new URL(/https:\/\/other\.example\.test\/welcome\?token=[^\s]+/.exec(mail.text)![0]).searchParams.get('token')!;
    expect(sha256(token)).toBe((await codeRows(t, user.email))[0].token_hash);

    const other = await t.register();
    for (const redirect_to of ['https://evil.example/welcome', 'https://other.example.test/elsewhere', 'javascript:alert(1)']) {
      const res = await ask(t, { email: other.email, redirect_to });
      expectError(res, 400, 'INVALID_REDIRECT');
      // The operator who set up the application learns which setting to change.
      expect(res.body.error.message).toBe('The redirect address is not on the allow-list (AUTH_REDIRECT_URLS)');
    }
    await quiet(t, other.email);
    expect(await codeRows(t, other.email)).toHaveLength(0);
    expect(codeMails(other.email)).toHaveLength(0);
  });
});

describe('signing in', () => {
  it('with the code, once: the link of the same mail is void after it; the e-mail is verified; the session says how', async () => {
    const user = await t.register();
    expect((await t.get('/api/auth/me', { token: user.access })).body.data.email_verified).toBe(false);
    const mail = await mailFor(t, user.email);
    const code = codeIn(mail);

    const res = await verify(t, { email: `  ${user.email.toUpperCase()} `, code });
    expectSignedIn(res, user.email);
    expect(res.body.data.user.id).toBe(user.id);
    const claims = claimsOf(res.body.data.access_token);
    expect(claims.amr).toEqual(['otp']);
    expect(claims.aal).toBe('aal1');
    const session = await t.db.selectFrom('sessions').select(['amr', 'aal']).where('id', '=', claims.sid).executeTakeFirstOrThrow();
    expect(session).toEqual({ amr: ['otp'], aal: 'aal1' });
    expect((await t.get('/api/auth/me', { token: res.body.data.access_token })).body.data.email_verified).toBe(true);

    expectError(await verify(t, { email: user.email, code }), 400, 'INVALID_CODE');
    expectError(await verify(t, { token: linkToken(mail, 'sign-in') }), 400, 'INVALID_TOKEN');

    const [succeeded] = await auditRows(t, user.id, 'login.succeeded').then((rows) => rows.slice(-1));
    expect(succeeded.details).toEqual({ session_id: claims.sid, method: 'email_code', via: 'code', amr: ['otp'] });
    expect(await auditRows(t, user.id, 'email.verified')).toHaveLength(1);
  });

  it('with the link, once: the code of the same mail is void after it', async () => {
    const user = await t.register();
    const mail = await mailFor(t, user.email);
    const token = linkToken(mail, 'sign-in');
    expectSignedIn(await verify(t, { token }), user.email);
    expectError(await verify(t, { token }), 400, 'INVALID_TOKEN');
    expectError(await verify(t, { email: user.email, code: codeIn(mail) }), 400, 'INVALID_CODE');
    const [succeeded] = (await auditRows(t, user.id, 'login.succeeded')).slice(-1);
    expect(succeeded.details).toMatchObject({ method: 'email_code', via: 'link' });
  });

  it('of two requests with one code at once, exactly one signs in', async () => {
    const user = await t.register();
    const code = codeIn(await mailFor(t, user.email));
    const answers = await Promise.all([verify(t, { email: user.email, code }), verify(t, { email: user.email, code })]);
    expect(answers.map((res) => res.status).sort()).toEqual([200, 400]);
  });

  it('not once the code has expired, by the code or by the link', async () => {
    const user = await t.register();
    const mail = await mailFor(t, user.email);
    await t.db
      .updateTable('email_codes')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('email', '=', user.email)
      .execute();
    expectError(await verify(t, { email: user.email, code: codeIn(mail) }), 400, 'INVALID_CODE');
    expectError(await verify(t, { token: linkToken(mail, 'sign-in') }), 400, 'INVALID_TOKEN');
  });

  it('not with the code of an earlier mail: a new mail voids it', async () => {
    const user = await t.register();
    const first = await mailFor(t, user.email);
    await age(t, user.email, 120);
    const second = await mailFor(t, user.email);
    expectError(await verify(t, { token: linkToken(first, 'sign-in') }), 400, 'INVALID_TOKEN');
    if (codeIn(first) !== codeIn(second)) expectError(await verify(t, { email: user.email, code: codeIn(first) }), 400, 'INVALID_CODE');
    expectSignedIn(await verify(t, { email: user.email, code: codeIn(second) }), user.email);
  });
});

describe('the body', () => {
  it('is one proof: a code with its address, or a token alone; anything else is a 422 naming the fields', async () => {
    for (const body of [
      { email: 'a@example.com' },
      { email: 'a@example.com', code: '123456', token: 'x' },
      { token: 'x', email: 'a@example.com' },
      {},
    ])
      expectError(await verify(t, body), 422, 'VALIDATION_ERROR');
    const short = await verify(t, { email: 'a@example.com', code: '12345' });
    expectError(short, 422, 'VALIDATION_ERROR');
    expect(short.body.error.details).toContainEqual({ field: 'body.code', message: 'must be the six digits of the code' });
  });
});

describe('wrong codes', () => {
  it('are refused and logged; the fifth voids the code, which then fails even when right', async () => {
    const user = await t.register();
    const mail = await mailFor(t, user.email);
    const code = codeIn(mail);
    for (let i = 1; i <= 4; i++) expectError(await verify(t, { email: user.email, code: wrong(code) }), 400, 'INVALID_CODE');
    expect((await codeRows(t, user.email))[0]).toMatchObject({ failures: 4, used_at: null });
    expectError(await verify(t, { email: user.email, code: wrong(code) }), 400, 'INVALID_CODE');
    expect((await codeRows(t, user.email))[0]).toMatchObject({ failures: 5, used_at: expect.any(Date) });
    expectError(await verify(t, { email: user.email, code }), 400, 'INVALID_CODE');
    expectError(await verify(t, { token: linkToken(mail, 'sign-in') }), 400, 'INVALID_TOKEN');
    const failed = await auditRows(t, user.id, 'login.failed');
    expect(failed).toHaveLength(6);
    expect(failed[0].details).toEqual({ reason: 'invalid_code', method: 'email_code' });
  });

  it('count toward the lockout: past LOGIN_MAX_FAILURES the right code, and the password, answer 429', async () => {
    const user = await t.register();
    for (let i = 0; i < 8; i++) expectError(await verify(t, { email: user.email, code: '000000' }), 400, 'INVALID_CODE');
    expect(await auditRows(t, user.id, 'login.locked')).toHaveLength(1);
    const code = codeIn(await mailFor(t, user.email));
    const locked = await verify(t, { email: user.email, code });
    expectError(locked, 429, 'RATE_LIMITED');
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
    expectError(await t.post('/api/auth/login/json', { email: user.email, password: user.password }), 429, 'RATE_LIMITED');
    // The code itself was never compared, so it still works by its link once the lock is gone.
    expect((await codeRows(t, user.email)).slice(-1)[0]).toMatchObject({ failures: 0, used_at: null });
  });

  it('a right code clears the failures counted before it, as a password login does', async () => {
    const user = await t.register();
    // A verified address: the code proves nothing new, and the password stays (an unproven one would end).
    await t.db.updateTable('users').set({ email_verified: true }).where('id', '=', user.id).execute();
    const code = codeIn(await mailFor(t, user.email));
    for (let i = 0; i < 4; i++) expectError(await verify(t, { email: user.email, code: wrong(code) }), 400, 'INVALID_CODE');
    expectSignedIn(await verify(t, { email: user.email, code }), user.email);
    // Eight more wrong passwords are needed for a lock: the four before the code no longer count.
    for (let i = 0; i < 7; i++)
      expectError(await t.post('/api/auth/login/json', { email: user.email, password: 'wrong-password' }), 401, 'INVALID_CREDENTIALS');
    expect((await t.post('/api/auth/login/json', { email: user.email, password: user.password })).status).toBe(200);
  });
});

describe('the cooldown', () => {
  it('sends one mail a minute and five an hour per address; a request within it leaves the code sent working', async () => {
    const user = await t.register();
    const first = await mailFor(t, user.email);
    expect(await ask(t, { email: user.email })).toMatchObject({ status: 202, body: ACCEPTED });
    await quiet(t, user.email);
    expect(codeMails(user.email)).toHaveLength(1);
    expect(await codeRows(t, user.email)).toHaveLength(1);

    for (let sent = 2; sent <= 5; sent++) {
      await age(t, user.email, 61);
      await mailFor(t, user.email);
    }
    await age(t, user.email, 61);
    expect(await ask(t, { email: user.email })).toMatchObject({ status: 202, body: ACCEPTED });
    await quiet(t, user.email);
    expect(codeMails(user.email)).toHaveLength(5);
    expect(await codeRows(t, user.email)).toHaveLength(5);
    expect(codeIn(first)).toMatch(/^\d{6}$/);
    expect(await auditRows(t, user.id, 'email_code.requested')).toHaveLength(5);
  });
});

describe('a second factor', () => {
  const codeFor = (secret: string) =>
    new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp: Date.now() });

  it('is still asked for: 403 MFA_REQUIRED, and the session after it says both steps', async () => {
    const user = await t.register();
    // A verified address: the factor stays (the first proof of an unproven address would remove it).
    await t.db.updateTable('users').set({ email_verified: true }).where('id', '=', user.id).execute();
    const api = t.clientFor(user.access);
    const started = await api.POST('/api/auth/mfa/totp', { body: { name: 'Phone' } });
    const { factor_id: id, secret } = started.data!.data;
    const confirmed = await api.POST('/api/auth/mfa/totp/{id}/confirm', { params: { path: { id } }, body: { code: codeFor(secret) } });
    const recovery = confirmed.data!.data.recovery_codes![0];

    const mail = await mailFor(t, user.email);
    const res = await verify(t, { email: user.email, code: codeIn(mail) });
    expectError(res, 403, 'MFA_REQUIRED');
    expect(res.body.error.methods).toEqual(['totp', 'recovery_code']);
    // The code is spent with the first step: the link of the same mail is void.
    expectError(await verify(t, { token: linkToken(mail, 'sign-in') }), 400, 'INVALID_TOKEN');

    const done = await t.post('/api/auth/mfa/verify', { mfa_token: res.body.error.mfa_token, method: 'recovery_code', code: recovery });
    expectSignedIn(done, user.email);
    const claims = claimsOf(done.body.data.access_token);
    expect(claims.amr).toEqual(['otp', 'mfa']);
    expect(claims.aal).toBe('aal2');
    const [succeeded] = (await auditRows(t, user.id, 'login.succeeded')).slice(-1);
    expect(succeeded.details).toMatchObject({ amr: ['otp', 'mfa'] });
  });
});

describe('a disabled account', () => {
  it('is sent nothing, and a code it had before is refused with 403', async () => {
    const user = await t.register();
    const mail = await mailFor(t, user.email);
    const admin = await t.adminToken();
    expect((await t.put(`/api/users/${user.id}`, { is_active: false }, { token: admin })).status).toBe(200);

    await age(t, user.email, 3600);
    expect(await ask(t, { email: user.email })).toMatchObject({ status: 202, body: ACCEPTED });
    await quiet(t, user.email);
    expect(codeMails(user.email)).toHaveLength(1);
    expect(await codeRows(t, user.email)).toHaveLength(1);

    const refused = await verify(t, { email: user.email, code: codeIn(mail) });
    expectError(refused, 403, 'FORBIDDEN');
    expect(refused.body.error.message).toBe('Account is disabled');
    const [failed] = (await auditRows(t, user.id, 'login.failed')).slice(-1);
    expect(failed.details).toEqual({ reason: 'account_disabled', method: 'email_code' });
  });
});

describe('an address without an account', () => {
  it('is sent nothing while EMAIL_CODE_SIGNUP is off, and its code attempts fail as any wrong code', async () => {
    const email = uniqueEmail('nobody');
    expect(await ask(t, { email })).toMatchObject({ status: 202, body: ACCEPTED });
    await quiet(t, email);
    expect(codeMails(email)).toHaveLength(0);
    expect(await codeRows(t, email)).toHaveLength(0);
    expectError(await verify(t, { email, code: '123456' }), 400, 'INVALID_CODE');
    expect(await t.db.selectFrom('users').select('id').where('email', '=', email).execute()).toHaveLength(0);
  });
});

describe('no enumeration', () => {
  it('answers a request and a wrong code alike for an account and for an unknown address', async () => {
    const user = await t.register();
    const unknown = uniqueEmail('nobody');
    const pick = (res: Response) => ({ status: res.status, body: res.body, type: res.headers['content-type'] });
    const [known, missing] = [await ask(t, { email: user.email }), await ask(t, { email: unknown })];
    expect(pick(known)).toEqual(pick(missing));
    expect(Object.keys(known.headers).sort()).toEqual(Object.keys(missing.headers).sort());
    await quiet(t, user.email);
    const [knownWrong, missingWrong] = [
      await verify(t, { email: user.email, code: '000001' }),
      await verify(t, { email: unknown, code: '000001' }),
    ];
    expect(pick(knownWrong)).toEqual(pick(missingWrong));
    expect(knownWrong.body.error.code).toBe('INVALID_CODE');
  });
});

describe('with EMAIL_CODE_SIGNUP=true', () => {
  let s: TestContext;
  beforeAll(async () => {
    s = await startTestApp({ SMTP_URL: smtp.url, APP_URL, MAIL_POLL_INTERVAL_MS: '100', EMAIL_CODE_SIGNUP: 'true' });
  });
  afterAll(() => s?.close());

  it('the code of an unknown address creates the account, verified, named after the local part, with no password', async () => {
    const email = uniqueEmail('grace.hopper');
    const mail = await mailFor(s, email);
    expect(mail.subject).toBe(SIGNUP_SUBJECT);
    expect(mail.text).toContain(`Hello ${email.slice(0, email.indexOf('@'))},`);
    expect(await s.db.selectFrom('users').select('id').where('email', '=', email).execute()).toHaveLength(0);
    expect((await codeRows(s, email))[0].user_id).toBeNull();

    const res = await verify(s, { email, code: codeIn(mail) });
    expectSignedIn(res, email);
    expect(res.body.data.user.name).toBe(email.slice(0, email.indexOf('@')));
    expect(res.body.data.user.role).toBe('user');
    const id = res.body.data.user.id as number;
    expect(await auditRows(s, id, 'user.registered')).toEqual([expect.objectContaining({ details: { method: 'email_code' } })]);
    // No password anyone knows: not the empty one, not the address.
    for (const password of ['', email, 'password-123'])
      expect((await s.post('/api/auth/login/json', { email, password: password || 'x' })).status).toBe(401);
    // A second mail to the address now signs in to the same account.
    await age(s, email, 120);
    const again = await verify(s, { token: linkToken(await mailFor(s, email), 'sign-in') });
    expect(again.body.data.user.id).toBe(id);
    expect(again.body.data.user.name).toBe(email.slice(0, email.indexOf('@')));
  });

  it('still sends nothing to a disabled account', async () => {
    const user = await s.register();
    const admin = await s.adminToken();
    await s.put(`/api/users/${user.id}`, { is_active: false }, { token: admin });
    expect(await ask(s, { email: user.email })).toMatchObject({ status: 202, body: ACCEPTED });
    await quiet(s, user.email);
    expect(await codeRows(s, user.email)).toHaveLength(0);
  });
});

describe('with EMAIL_CODE_ENABLED=false', () => {
  let off: TestContext;
  beforeAll(async () => {
    off = await startTestApp({ SMTP_URL: smtp.url, EMAIL_CODE_ENABLED: 'false' });
  });
  afterAll(() => off?.close());

  it('both operations are gone: 404 in the envelope, and the served contract does not list them', async () => {
    const user = await off.register();
    const asked = await ask(off, { email: user.email });
    expectError(asked, 404, 'NOT_FOUND');
    expect(asked.body.error.message).toBe('No route for POST /api/auth/email-code');
    expectError(await verify(off, { token: 'x' }), 404, 'NOT_FOUND');
    await quiet(off, user.email);
    expect(await codeRows(off, user.email)).toHaveLength(0);
    const served = await request(off.app.koa.callback()).get('/openapi.json');
    expect(Object.keys(served.body.paths)).not.toContain('/api/auth/email-code');
    expect(Object.keys(served.body.paths)).not.toContain('/api/auth/email-code/verify');
    expect(Object.keys(served.body.paths)).toContain('/api/auth/forgot-password');
  });
});

describe('the log', () => {
  let base: TestContext;
  let app: App;
  const log = captureLog();
  beforeAll(async () => {
    // The harness app logs nowhere: run one on its database and configuration with a logger writing here.
    base = await startTestApp({ SMTP_URL: smtp.url, APP_URL, MAIL_POLL_INTERVAL_MS: '100' });
    await base.stop();
    app = await createApp(base.config, { logger: createLogger({ level: 'debug' }, log.stream) });
  });
  afterAll(async () => {
    await app?.close();
    await base?.close();
  });

  it('never holds a code or a link token, whatever happens to them', async () => {
    const http = () => request(app.koa.callback());
    const email = uniqueEmail();
    expect((await http().post('/api/auth/register').send({ email, password: 'password-123', name: 'Logged' })).status).toBe(201);
    expect((await http().post('/api/auth/email-code').send({ email })).status).toBe(202);
    await app.services.emailCode.settled();
    const mail = await smtp.waitFor((m) => m.to.includes(email) && m.subject === SIGN_IN_SUBJECT);
    const code = codeIn(mail);
    const token = linkToken(mail, 'sign-in');
    expect(
      (
        await http()
          .post('/api/auth/email-code/verify')
          .send({ email, code: wrong(code) })
      ).status,
    ).toBe(400);
    expect((await http().post('/api/auth/email-code/verify').send({ email, code })).status).toBe(200);
    expect((await http().post('/api/auth/email-code/verify').send({ token })).status).toBe(400);
    expect((await http().post('/api/auth/email-code/verify').send({ email, code, extra: 1 })).status).toBe(422);
    expect(log.lines().some((line) => line.operationId === 'verifyEmailCode')).toBe(true);
    expect(log.text).not.toContain(code);
    expect(log.text).not.toContain(token);
  });
});
