import request from 'supertest';
import { loadConfig } from '../src/config/index.js';
import { startTestApp, TEST_SECRET, type RegisteredUser, type TestContext } from './support/app.js';
import { linkToken, startSmtpServer, type TestSmtpServer } from './support/smtp.js';

// The pages the e-mailed links open are not part of the contract (like the docs pages), so these
// requests go through supertest directly rather than the contract-checking helpers of the harness.

let smtp: TestSmtpServer;
let t: TestContext;
let http: ReturnType<typeof request>;
beforeAll(async () => {
  smtp = await startSmtpServer();
  // APP_URL unset: the links point at this service, which serves their pages.
  t = await startTestApp({ SMTP_URL: smtp.url, MAIL_POLL_INTERVAL_MS: '100' });
  http = request(t.app.koa.callback());
});
afterAll(async () => {
  await t?.close();
  await smtp?.close();
});

interface Page {
  status: number;
  html: string;
  headers: Record<string, string | string[] | undefined>;
}

/** The page's form: its hidden fields, and the cookie the page set. */
interface ShownForm {
  cookie: string;
  fields: Record<string, string>;
}

const get = async (path: string, cookie?: string): Promise<Page> => {
  const res = await http.get(path).set(cookie ? { Cookie: cookie } : {});
  return { status: res.status, html: res.text, headers: res.headers };
};

const post = async (path: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Page> => {
  const res = await http.post(path).type('form').set(headers).send(new URLSearchParams(fields).toString());
  return { status: res.status, html: res.text, headers: res.headers };
};

function formOf(page: Page): ShownForm {
  const setCookie = ([] as string[]).concat(page.headers['set-cookie'] ?? []);
  const cookie = setCookie.map((line) => line.split(';')[0]).join('; ');
  const fields: Record<string, string> = {};
  for (const [, name, value] of page.html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[name] = value;
  return { cookie, fields };
}

/** The notice the page shows (success or error), as text. */
const notice = (page: Page) => /<p class="notice (\w+)"[^>]*>([^<]*)<\/p>/.exec(page.html)?.slice(1, 3);

const tokenRow = (userId: number, purpose: 'password_reset' | 'email_verification') =>
  t.db
    .selectFrom('account_tokens')
    .select(['used_at'])
    .where('user_id', '=', userId)
    .where('purpose', '=', purpose)
    .orderBy('id', 'desc')
    .executeTakeFirstOrThrow();

async function resetLink(user: RegisteredUser): Promise<{ path: string; token: string }> {
  expect((await t.post('/api/auth/forgot-password', { email: user.email })).status).toBe(200);
  const mail = await smtp.waitFor((m) => m.to.includes(user.email) && m.subject === 'Reset your password');
  const token = linkToken(mail, 'reset-password');
  return { path: `/reset-password?token=${token}`, token };
}

async function verifyLink(user: RegisteredUser): Promise<{ path: string; token: string }> {
  const mail = await smtp.waitFor((m) => m.to.includes(user.email) && m.subject === 'Confirm your e-mail address');
  const token = linkToken(mail, 'verify-email');
  return { path: `/verify-email?token=${token}`, token };
}

describe('/reset-password', () => {
  it('shows a labelled form without using the token, under the service-wide CSP, and never cached', async () => {
    const user = await t.register();
    const { path, token } = await resetLink(user);
    const page = await get(path);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toContain("default-src 'self'");
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['content-security-policy']).toContain("form-action 'self'");
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.html).toContain('<label for="new_password">New password</label>');
    expect(page.html).toContain('<input id="new_password" name="new_password" type="password"');
    expect(page.html).toContain('<label for="confirm_password">Repeat the new password</label>');
    expect(page.html).toContain('<form method="post" action="/reset-password">');
    expect(page.html).not.toMatch(/<script/i);
    expect(formOf(page).fields.token).toBe(token);
    expect(formOf(page).cookie).toMatch(/^account_form=[\w-]{43}$/);
    // Opening the link (a mail scanner does) twice leaves it working.
    expect((await get(path)).status).toBe(200);
    expect(await tokenRow(user.id, 'password_reset')).toEqual({ used_at: null });
  });

  it('sets the new password with the form; the link then no longer works', async () => {
    const user = await t.register();
    const { path } = await resetLink(user);
    const { cookie, fields } = formOf(await get(path));
    const done = await post(
      '/reset-password',
      { ...fields, new_password: 'brand-new-secret-9', confirm_password: 'brand-new-secret-9' },
      { Cookie: cookie },
    );
    expect(done.status).toBe(200);
    expect(notice(done)).toEqual(['success', 'Your password has been changed.']);
    expect((await tokenRow(user.id, 'password_reset')).used_at).not.toBeNull();
    expect((await t.post('/api/auth/login/json', { email: user.email, password: 'brand-new-secret-9' })).status).toBe(200);
    expect((await t.post('/api/auth/login/json', { email: user.email, password: user.password })).status).toBe(401);

    const again = await post(
      '/reset-password',
      { ...fields, new_password: 'another-secret-99', confirm_password: 'another-secret-99' },
      { Cookie: cookie },
    );
    expect(again.status).toBe(400);
    expect(notice(again)?.[1]).toMatch(/^This link is not valid: it has expired, has already been used/);
    expect(again.html).not.toContain('<form');
    expect((await t.post('/api/auth/login/json', { email: user.email, password: 'brand-new-secret-9' })).status).toBe(200);
  });

  it('refuses a weak or mistyped password with the reason, shows the form again and leaves the link working', async () => {
    const user = await t.register();
    const { path } = await resetLink(user);
    const { cookie, fields } = formOf(await get(path));
    const cases: Array<[Record<string, string>, string]> = [
      [
        { new_password: 'long-enough-1', confirm_password: 'long-enough-2' },
        'The two passwords are not the same. Type the new password twice.',
      ],
      [{ new_password: 'short', confirm_password: 'short' }, 'The new password must be at least 8 characters long.'],
      [{ new_password: 'password123', confirm_password: 'password123' }, 'The new password is too common. Choose another one.'],
      [
        { new_password: user.email, confirm_password: user.email },
        'The new password must not be the same as the e-mail address. Choose another one.',
      ],
    ];
    for (const [passwords, message] of cases) {
      const page = await post('/reset-password', { ...fields, ...passwords }, { Cookie: cookie });
      expect({ status: page.status, notice: notice(page) }).toEqual({ status: 422, notice: ['error', message] });
      expect(page.html).toContain('<label for="new_password">');
      expect(formOf(page).fields.token).toBe(fields.token);
      expect(page.html).not.toContain(passwords.new_password === user.email ? 'value="' + user.email : passwords.new_password);
    }
    expect(await tokenRow(user.id, 'password_reset')).toEqual({ used_at: null });
  });

  it('refuses a post without the form cookie, with another CSRF value, or from another origin, and the token stays unused', async () => {
    const user = await t.register();
    const { path } = await resetLink(user);
    const { cookie, fields } = formOf(await get(path));
    const passwords = { new_password: 'forged-password-1', confirm_password: 'forged-password-1' };
    const { cookie: otherCookie } = formOf(await get(path));
    const forged: Array<[Record<string, string>, Record<string, string>]> = [
      [{ ...fields, ...passwords }, {}],
      [{ token: fields.token, ...passwords }, { Cookie: cookie }],
      [{ ...fields, csrf: 'x'.repeat(43), ...passwords }, { Cookie: cookie }],
      [{ ...fields, ...passwords }, { Cookie: otherCookie }],
      [
        { ...fields, ...passwords },
        { Cookie: cookie, Origin: 'https://attacker.example' },
      ],
      [
        { ...fields, ...passwords },
        { Cookie: cookie, 'Sec-Fetch-Site': 'cross-site' },
      ],
    ];
    for (const [index, [body, headers]] of forged.entries()) {
      const page = await post('/reset-password', body, headers);
      expect({ index, status: page.status, notice: notice(page)?.[0] }).toEqual({ index, status: 403, notice: 'error' });
      expect(page.html).toContain('This form could not be accepted');
    }
    expect(await tokenRow(user.id, 'password_reset')).toEqual({ used_at: null });
    // The same browser's own post, from this origin, still works.
    const origin = `http://${new URL(t.baseUrl).host}`;
    const res = await http
      .post('/reset-password')
      .type('form')
      .set({ Cookie: cookie, Origin: origin, Host: new URL(t.baseUrl).host })
      .send(new URLSearchParams({ ...fields, ...passwords }).toString());
    expect(res.status).toBe(200);
  });

  it('says so when the link lost its token', async () => {
    const page = await get('/reset-password');
    expect(page.status).toBe(400);
    expect(notice(page)?.[1]).toMatch(/^This link is incomplete/);
  });
});

describe('/verify-email', () => {
  it('shows a button without using the token; the button verifies the address; the link then no longer works', async () => {
    const user = await t.register();
    const { path, token } = await verifyLink(user);
    const page = await get(path);
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toContain("default-src 'self'");
    expect(page.html).toContain('<form method="post" action="/verify-email">');
    expect(page.html).toContain('<button type="submit">Confirm my e-mail address</button>');
    expect((await get(path)).status).toBe(200);
    expect(await tokenRow(user.id, 'email_verification')).toEqual({ used_at: null });
    const { cookie, fields } = formOf(page);
    expect(fields.token).toBe(token);

    // Without the cookie: refused, nothing verified.
    expect((await post('/verify-email', fields)).status).toBe(403);
    expect(await t.db.selectFrom('users').select('email_verified').where('id', '=', user.id).executeTakeFirstOrThrow()).toEqual({
      email_verified: false,
    });

    const done = await post('/verify-email', fields, { Cookie: cookie });
    expect(done.status).toBe(200);
    expect(notice(done)).toEqual(['success', `Your e-mail address ${user.email} is confirmed.`]);
    expect(await t.db.selectFrom('users').select('email_verified').where('id', '=', user.id).executeTakeFirstOrThrow()).toEqual({
      email_verified: true,
    });
    expect((await tokenRow(user.id, 'email_verification')).used_at).not.toBeNull();

    const again = await post('/verify-email', fields, { Cookie: cookie });
    expect(again.status).toBe(400);
    expect(notice(again)?.[1]).toMatch(/^This link is not valid/);
  });
});

describe('when APP_URL is another front end', () => {
  it('does not serve the pages: its own pages take the links', async () => {
    const elsewhere = await startTestApp({ APP_URL: 'https://app.example.test' });
    try {
      expect(elsewhere.config.account.pagesEnabled).toBe(false);
      const res = await request(elsewhere.app.koa.callback()).get('/reset-password?token=abc');
      expect(res.status).toBe(404);
    } finally {
      await elsewhere.close();
    }
  }, 180_000);

  it.each([
    [{}, true],
    [{ APP_URL: 'http://localhost:8000' }, true],
    [{ APP_URL: 'http://127.0.0.1:8000/' }, true],
    [{ APP_URL: 'http://localhost:3000' }, false],
    [{ APP_URL: 'https://app.example.test' }, false],
    [{ APP_URL: 'https://accounts.example.test', ACCOUNT_PAGES_ENABLED: 'true' }, true],
    [{ ACCOUNT_PAGES_ENABLED: 'false' }, false],
  ])('%j serves them: %s', (env, served) => {
    expect(loadConfig({ SECRET_KEY: TEST_SECRET, ...env }).account.pagesEnabled).toBe(served);
  });
});
