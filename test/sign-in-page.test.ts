import { Secret, TOTP } from 'otpauth';
import request from 'supertest';
import { createApp, type App } from '../src/app.js';
import { createLogger } from '../src/logger.js';
import { startTestApp, uniqueEmail, type RegisteredUser, type TestContext } from './support/app.js';
import { auditRows } from './support/audit.js';
import { FormBrowser, formsOf, formTo, type Page } from './support/hosted-pages.js';
import { captureLog } from './support/log.js';
import { outboxDrained } from './support/outbox.js';
import { linkToken, startSmtpServer, type TestSmtpServer } from './support/smtp.js';
import { until } from './support/wait.js';

// The page the e-mailed sign-in link opens (`/sign-in`), the code in the development log, and the
// page at `/`. The pages are not part of the contract: a browser without JavaScript (FormBrowser)
// opens them over real HTTP.

const WELCOME = 'https://app.example.test/welcome';

let smtp: TestSmtpServer;
let t: TestContext;
beforeAll(async () => {
  smtp = await startSmtpServer();
  // APP_URL unset: the service serves the pages the links open.
  t = await startTestApp({ SMTP_URL: smtp.url, MAIL_POLL_INTERVAL_MS: '100', AUTH_REDIRECT_URLS: 'https://app.example.test/*' });
});
afterAll(async () => {
  await t?.close();
  await smtp?.close();
});

/** Asks for a sign-in mail and returns the path of its link (on this service, whatever APP_URL's port). */
async function signInLink(user: RegisteredUser, redirectTo?: string): Promise<{ path: string; token: string; code: string }> {
  const body = { email: user.email, ...(redirectTo === undefined ? {} : { redirect_to: redirectTo }) };
  expect((await t.post('/api/auth/email-code', body)).status).toBe(202);
  await t.app.services.emailCode.settled();
  await outboxDrained(t.db, user.email);
  const mail = await smtp.waitFor((m) => m.to.includes(user.email) && m.subject === 'Your sign-in code');
  const token = linkToken(mail, 'sign-in');
  const link = new URL(/https?:\/\/\S+\/sign-in\?\S+/.exec(mail.text)![0]);
  return { path: `${link.pathname}${link.search}`, token, code: /^ {4}(\d{6})$/m.exec(mail.text)![1] };
}

const codeRow = (email: string) =>
  t.db.selectFrom('email_codes').select(['used_at']).where('email', '=', email).orderBy('id', 'desc').executeTakeFirstOrThrow();

const sessionCount = async (userId: number) =>
  (await t.db.selectFrom('sessions').select('id').where('user_id', '=', userId).execute()).length;

/** The notice the page shows (success or error), as text. */
const notice = (page: Page) => /<p class="notice (\w+)"[^>]*>([^<]*)<\/p>/.exec(page.html)?.slice(1, 3);

/** The fields of an address's fragment. */
const fragmentOf = (address: string) => Object.fromEntries(new URLSearchParams(new URL(address).hash.slice(1)));

describe('/sign-in', () => {
  it('shows a button without spending the link; the button signs in and goes on to redirect_to with the tokens in the fragment', async () => {
    const user = await t.register();
    const { path, token } = await signInLink(user, WELCOME);
    expect(new URL(path, t.baseUrl).searchParams.get('redirect_to')).toBe(WELCOME);
    const sessionsBefore = await sessionCount(user.id);
    const browser = new FormBrowser(t.baseUrl);

    // A mail scanner opens the link, and so does the person: twice, and nothing is spent.
    const scanned = await new FormBrowser(t.baseUrl).open(path);
    expect(scanned.status).toBe(200);
    const page = await browser.open(path);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('cache-control')).toBe('no-store');
    const policy = page.headers.get('content-security-policy')!;
    expect(policy).toContain("default-src 'self'");
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("form-action 'self' https://app.example.test;");
    expect(page.html).toContain(`<button type="submit">Sign in as ${user.email}</button>`);
    expect(page.html).toContain('You will then go back to <strong>app.example.test</strong>.');
    expect(page.html).not.toMatch(/<script/i);
    expect(formTo(page, '/sign-in').fields).toEqual({ token, redirect_to: WELCOME, csrf: expect.any(String) });
    expect(await codeRow(user.email)).toEqual({ used_at: null });
    expect(await sessionCount(user.id)).toBe(sessionsBefore);

    const form = formTo(page, '/sign-in');
    const answer = await browser.request(form.action, { form: form.fields });
    expect(answer.status).toBe(303);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    const location = answer.headers.get('location')!;
    expect(location.startsWith(`${WELCOME}#`)).toBe(true);
    const fragment = fragmentOf(location);
    expect(fragment).toEqual({
      access_token: expect.any(String),
      refresh_token: expect.any(String),
      token_type: 'bearer',
      expires_in: '1800',
    });
    // The tokens are in the fragment only: not in the query, nor in the body.
    expect(new URL(location).search).toBe('');
    expect(answer.html).not.toContain(fragment.access_token);

    const me = await t.get('/api/auth/me', { token: fragment.access_token });
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ id: user.id, email: user.email, email_verified: true });
    expect((await codeRow(user.email)).used_at).not.toBeNull();
    expect(await sessionCount(user.id)).toBe(sessionsBefore + 1);
    const [succeeded] = (await auditRows(t, user.id, 'login.succeeded')).slice(-1);
    expect(succeeded.details).toMatchObject({ method: 'email_code', via: 'link', amr: ['otp'] });

    // Spent: the link now opens a page that says so, with no button.
    const again = await browser.open(path);
    expect(again.status).toBe(400);
    expect(notice(again)?.[1]).toMatch(/^This link is not valid: it has expired, has already been used/);
    expect(formsOf(again)).toEqual([]);
    const twice = await browser.request(form.action, { form: form.fields });
    expect(twice.status).toBe(400);
    expect(notice(twice)?.[1]).toMatch(/^This link is not valid/);
    expect(await sessionCount(user.id)).toBe(sessionsBefore + 1);
  });

  it('refuses a post from another site, or without the form cookie, and spends nothing', async () => {
    const user = await t.register();
    const { path } = await signInLink(user, WELCOME);
    const sessionsBefore = await sessionCount(user.id);
    const browser = new FormBrowser(t.baseUrl);
    const form = formTo(await browser.open(path), '/sign-in');

    const forged: Array<[FormBrowser, Record<string, string>, Record<string, string>]> = [
      // Another site's page posting the fields to the service, in the person's browser.
      [browser, form.fields, { origin: 'https://attacker.example' }],
      [browser, form.fields, { origin: 'null', 'sec-fetch-site': 'cross-site' }],
      // A browser that never opened the page, so holds no form cookie.
      [new FormBrowser(t.baseUrl), form.fields, {}],
      // The page's cookie with a CSRF value of the attacker's making.
      [browser, { ...form.fields, csrf: 'x'.repeat(43) }, {}],
    ];
    for (const [index, [from, fields, headers]] of forged.entries()) {
      const page = await from.request(form.action, { form: fields, headers });
      expect({ index, status: page.status, location: page.headers.get('location') }).toEqual({ index, status: 403, location: null });
      expect(notice(page)).toEqual(['error', expect.stringMatching(/^This form could not be accepted/)]);
    }
    expect(await codeRow(user.email)).toEqual({ used_at: null });
    expect(await sessionCount(user.id)).toBe(sessionsBefore);
    expect(await auditRows(t, user.id, 'login.succeeded')).toHaveLength(0);

    // The page's own post still signs in.
    const done = await browser.request(form.action, { form: form.fields });
    expect(done.status).toBe(303);
    expect(await sessionCount(user.id)).toBe(sessionsBefore + 1);
  });

  it('refuses a link whose redirect_to is not on the allow-list, showing it and spending nothing', async () => {
    const user = await t.register();
    const { token } = await signInLink(user, WELCOME);
    const browser = new FormBrowser(t.baseUrl);
    const evil = 'https://attacker.example/collect';
    const shown = await browser.open(`/sign-in?token=${token}&redirect_to=${encodeURIComponent(evil)}`);
    expect(shown.status).toBe(400);
    expect(notice(shown)?.[1]).toMatch(/^This link leads on to an address this service does not send anyone to/);
    expect(formsOf(shown)).toEqual([]);

    // The form of the genuine page, its hidden redirect_to changed on the way.
    const form = formTo(await browser.open(`/sign-in?token=${token}&redirect_to=${encodeURIComponent(WELCOME)}`), '/sign-in');
    const posted = await browser.request(form.action, { form: { ...form.fields, redirect_to: evil } });
    expect(posted.status).toBe(400);
    expect(posted.headers.get('location')).toBeNull();
    expect(await codeRow(user.email)).toEqual({ used_at: null });
  });

  it('without redirect_to, ends on a page saying who is signed in, and shows no token', async () => {
    const user = await t.register();
    const { path } = await signInLink(user);
    expect(path).toMatch(/^\/sign-in\?token=[\w-]+$/);
    const browser = new FormBrowser(t.baseUrl);
    const page = await browser.open(path);
    expect(page.headers.get('content-security-policy')).toContain("form-action 'self';");
    expect(formTo(page, '/sign-in').fields).toEqual({ token: expect.any(String), csrf: expect.any(String) });
    const sessionsBefore = await sessionCount(user.id);
    const done = await browser.submit(formTo(page, '/sign-in'));
    expect(done.status).toBe(200);
    expect(notice(done)).toEqual(['success', `You are signed in as ${user.email}.`]);
    expect(done.html).not.toMatch(/eyJ|access_token|refresh_token/);
    expect(await sessionCount(user.id)).toBe(sessionsBefore + 1);
  });

  it('shows an expired link, or one whose code was used, as not valid', async () => {
    const user = await t.register();
    const { path, code } = await signInLink(user);
    const browser = new FormBrowser(t.baseUrl);
    const form = formTo(await browser.open(path), '/sign-in');
    await t.db
      .updateTable('email_codes')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('email', '=', user.email)
      .execute();
    const expired = await browser.open(path);
    expect({ status: expired.status, notice: notice(expired)?.[0], forms: formsOf(expired) }).toEqual({
      status: 400,
      notice: 'error',
      forms: [],
    });
    const posted = await browser.request(form.action, { form: form.fields });
    expect(posted.status).toBe(400);
    expect(notice(posted)?.[1]).toMatch(/^This link is not valid/);
    expect(await auditRows(t, user.id, 'login.succeeded')).toHaveLength(0);

    const other = await t.register();
    const second = await signInLink(other);
    expect((await t.post('/api/auth/email-code/verify', { email: other.email, code: second.code })).status).toBe(200);
    expect((await browser.open(second.path)).status).toBe(400);
    expect(code).toMatch(/^\d{6}$/);
  });

  it('hands a second step to the application: redirect_to gets the mfa_token instead of tokens', async () => {
    const user = await t.register();
    // A verified address: the first proof of an unverified one would end the factor set up before it.
    await t.db.updateTable('users').set({ email_verified: true }).where('id', '=', user.id).execute();
    const api = t.clientFor(user.access);
    const started = await api.POST('/api/auth/mfa/totp', { body: { name: 'Phone' } });
    const { factor_id: id, secret } = started.data!.data;
    const totp = new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 });
    const confirmed = await api.POST('/api/auth/mfa/totp/{id}/confirm', {
      params: { path: { id } },
      body: { code: totp.generate({ timestamp: Date.now() }) },
    });
    const recovery = confirmed.data!.data.recovery_codes![0];

    const { path } = await signInLink(user, WELCOME);
    const browser = new FormBrowser(t.baseUrl);
    const left = await browser.submit(formTo(await browser.open(path), '/sign-in'));
    expect(left.status).toBe(0);
    const fragment = fragmentOf(left.url);
    expect(fragment).toEqual({ mfa_token: expect.any(String), methods: 'totp,recovery_code' });
    const done = await t.post('/api/auth/mfa/verify', { mfa_token: fragment.mfa_token, method: 'recovery_code', code: recovery });
    expect(done.status).toBe(200);
    const [succeeded] = (await auditRows(t, user.id, 'login.succeeded')).slice(-1);
    expect(succeeded.details).toMatchObject({ amr: ['otp', 'mfa'] });
  });
});

describe('/', () => {
  it('answers a browser with the service name, its version and working links, under the service-wide policy', async () => {
    const http = request(t.app.koa.callback());
    const home = await http.get('/').set('Accept', 'text/html,application/xhtml+xml,*/*;q=0.8');
    expect(home.status).toBe(200);
    expect(home.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(home.headers['content-security-policy']).toContain("default-src 'self'");
    expect(home.text).not.toMatch(/<script/i);
    expect(home.text).toContain(`version ${t.config.server.appVersion}`);
    const links = [...home.text.matchAll(/<a href="([^"]+)">/g)].map(([, href]) => href);
    expect(links).toEqual(['/docs', '/redoc', '/openapi.json', '/.well-known/openid-configuration', '/health']);
    for (const href of links) expect({ href, status: (await http.get(href)).status }).toEqual({ href, status: 200 });

    const json = await http.get('/').set('Accept', 'application/json');
    expect(json.status).toBe(404);
    expect(json.body.error.code).toBe('NOT_FOUND');
  });
});

describe('the development log, without SMTP_URL', () => {
  let base: TestContext;
  let app: App;
  const log = captureLog();
  beforeAll(async () => {
    // The harness app logs nowhere: run one on its database and configuration with a logger writing here.
    base = await startTestApp({ MAIL_POLL_INTERVAL_MS: '100' });
    await base.stop();
    app = await createApp(base.config, { logger: createLogger({ level: 'info' }, log.stream) });
  });
  afterAll(async () => {
    await app?.close();
    await base?.close();
  });

  it('carries the sign-in code beside the link, and the code signs in', async () => {
    const http = () => request(app.koa.callback());
    const email = uniqueEmail('logged');
    expect((await http().post('/api/auth/register').send({ email, password: 'password-123', name: 'Logged' })).status).toBe(201);
    expect((await http().post('/api/auth/email-code').send({ email })).status).toBe(202);
    const line = await until(
      () => log.lines().find((entry) => entry.mail?.to === email && entry.mail.subject === 'Your sign-in code'),
      'the sign-in mail in the log',
    );
    expect(line.msg).toBe('mail not sent (no SMTP_URL): here is its link and code');
    expect(line.mail).toEqual({
      to: email,
      subject: 'Your sign-in code',
      link: expect.stringMatching(/\/sign-in\?token=[\w-]+$/),
      code: expect.stringMatching(/^\d{6}$/),
    });
    const verified = await http().post('/api/auth/email-code/verify').send({ email, code: line.mail.code });
    expect(verified.status).toBe(200);
    expect(verified.body.data.user.email).toBe(email);
    // A mail without a code says only its link.
    const verification = await until(
      () => log.lines().find((entry) => entry.mail?.to === email && entry.mail.subject === 'Confirm your e-mail address'),
      'the verification mail in the log',
    );
    expect(verification.msg).toBe('mail not sent (no SMTP_URL): here is its link');
  });
});
