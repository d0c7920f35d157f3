import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { startTestApp, type TestContext } from './support/app.js';
import { startDnsServer, type DnsServer } from './support/dns-server.js';
import { expectError } from './support/expect.js';
import { FormBrowser, formTo, formsOf, type Page } from './support/hosted-pages.js';
import { freePort } from './support/net.js';
import { startSmtpServer, type TestSmtpServer } from './support/smtp.js';
import { startUpstreamIssuer, type UpstreamIssuer } from './support/upstream-issuer.js';
import { verifiedUser } from './support/organizations.js';
import { authorizationRequest, type OpenIdClient } from './support/relying-party.js';

// Single sign-on for organisations, over HTTP: a verified domain whose organisation signs its people
// in with its own identity provider (a real OpenID provider the test runs), the hosted sign-in that
// asks for the address first (openid-client the relying party, a browser without JavaScript the
// person), and `sso_required` holding against every other way in.

const REDIRECT = 'http://localhost/app/callback';
const SIGN_IN_SUBJECT = 'Your sign-in code';

let t: TestContext;
let server: Server;
let origin: string;
let dns: DnsServer;
let smtp: TestSmtpServer;
let upstream: UpstreamIssuer;
let oidc: OpenIdClient;
let admin: string;
let client: string;

beforeAll(async () => {
  oidc = await import('openid-client');
  [dns, smtp, upstream] = await Promise.all([startDnsServer(), startSmtpServer(), startUpstreamIssuer()]);
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  t = await startTestApp({
    APP_URL: origin,
    DNS_SERVERS: dns.address,
    PROVIDER_ALLOW_PRIVATE_URLS: 'true',
    SMTP_URL: smtp.url,
    MAIL_POLL_INTERVAL_MS: '100',
    EMAIL_CODE_ENABLED: 'true',
  });
  const handle = t.app.koa.callback();
  server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  admin = await t.adminToken();
  // Two providers at the same issuer: the organisation's, and another anyone may use.
  for (const [slug, name] of [
    ['acme-okta', 'Acme Okta'],
    ['elsewhere', 'Elsewhere'],
  ]) {
    const made = await t.post(
      '/api/identity-providers',
      { slug, name, kind: 'oidc', client_id: upstream.clientId, client_secret: upstream.clientSecret, issuer: upstream.issuer },
      { token: admin },
    );
    expect(made.status).toBe(201);
  }
  const res = await t.post(
    '/api/oauth/clients',
    { name: 'Team app', type: 'public', redirect_uris: [REDIRECT], first_party: true },
    { token: admin },
  );
  expect(res.status).toBe(201);
  client = res.body.data.client_id;
});
afterAll(async () => {
  if (server?.listening) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  await t?.close();
  await Promise.all([dns?.close(), smtp?.close(), upstream?.close()]);
});

const uniqueDomain = () => `acme-${randomBytes(4).toString('hex')}.test`;

/** An organisation with `domain` verified, signing its people in with Acme Okta under `policy`. */
async function organization(domain: string, policy: Record<string, unknown>) {
  const owner = await verifiedUser(t);
  const created = await t.post('/api/organizations', { name: `Acme ${randomBytes(3).toString('hex')}` }, { token: owner.access });
  expect(created.status).toBe(201);
  const id: number = created.body.data.id;
  const added = await t.post(`/api/organizations/${id}/domains`, { domain }, { token: owner.access });
  expect(added.status).toBe(201);
  dns.records.set(`_account-verification.${domain}`, [added.body.data.verification.value]);
  expect((await t.post(`/api/organizations/${id}/domains/${domain}/verify`, undefined, { token: owner.access })).status).toBe(200);
  const put = await t.put(`/api/organizations/${id}/sign-in`, { identity_provider: 'acme-okta', ...policy }, { token: owner.access });
  expect(put.status).toBe(200);
  return { id, owner };
}

/** An authorization request of the application, opened in a new browser: the page it leads to, and the code's exchange. */
async function authorize(extra: Record<string, string> = {}) {
  const browser = new FormBrowser(origin);
  const config = await oidc.discovery(new URL(origin), client, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
  const { url, exchange } = await authorizationRequest(oidc, config, { redirect_uri: REDIRECT, scope: 'openid email', ...extra });
  const page = await browser.open(url.href);
  return { browser, page, exchange };
}

/** The browser at the provider's authorization endpoint: the provider signs `person` in and sends them back. */
async function throughProvider(browser: FormBrowser, atProvider: Page): Promise<Page> {
  expect(atProvider.status).toBe(0);
  expect(atProvider.url.startsWith(`${upstream.issuer}/authorize?`)).toBe(true);
  const answer = await fetch(atProvider.url, { redirect: 'manual' });
  expect(answer.status).toBe(302);
  return browser.open(answer.headers.get('location')!);
}

/** The slug of the provider whose sign-in the browser was sent to (the callback it asks to come back to names it). */
const providerOf = (atProvider: Page) =>
  /\/providers\/([^/]+)\/callback$/.exec(new URL(atProvider.url).searchParams.get('redirect_uri') ?? '')?.[1];

const membersOf = async (id: number, token: string) =>
  ((await t.get(`/api/organizations/${id}/members`, { token })).body.data as Array<{ user: { id: number }; role: string }>).map((m) => ({
    id: m.user.id,
    role: m.role,
  }));

describe('the hosted sign-in asks for the address first', () => {
  it('sends a person at a verified domain to the organisation provider, and they come back signed in and a member', async () => {
    const domain = uniqueDomain();
    const { id, owner } = await organization(domain, { auto_join_role: 'member' });
    const email = `ada@${domain}`;
    upstream.person = { sub: `acme-${randomUUID()}`, email, email_verified: true, name: 'Ada Lovelace' };

    const { browser, page, exchange } = await authorize();
    expect(page.status).toBe(200);
    // The first step: the address alone (no password field yet), labelled, with its CSRF value.
    expect(formsOf(page).some((form) => form.action.endsWith('/login'))).toBe(false);
    const identify = formTo(page, '/identify');
    expect(identify.fields.csrf).toBeTruthy();
    expect(page.html).toMatch(/<label for="email">E-mail address<\/label>/);

    const atProvider = await browser.submit(identify, { email: `Ada@${domain.toUpperCase()}` });
    expect(providerOf(atProvider)).toBe('acme-okta');
    const back = await throughProvider(browser, atProvider);

    const claims = (await exchange(back)).claims()!;
    const user = await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow();
    expect(claims).toMatchObject({ sub: String(user.id), amr: ['fed'] });
    expect(await membersOf(id, owner.access)).toContainEqual({ id: user.id, role: 'member' });
  });

  it('routes the address an application names in login_hint without asking for it', async () => {
    const domain = uniqueDomain();
    await organization(domain, {});
    const email = `hint@${domain}`;
    upstream.person = { sub: `acme-${randomUUID()}`, email, email_verified: true };
    const { browser, page, exchange } = await authorize({ login_hint: email });
    expect(providerOf(page)).toBe('acme-okta');
    const claims = (await exchange(await throughProvider(browser, page))).claims()!;
    expect(claims.email).toBe(email);
  });

  it('gives a person at another domain every other way in, with the address filled in', async () => {
    await organization(uniqueDomain(), { sso_required: true });
    const person = await verifiedUser(t, `grace-${randomBytes(3).toString('hex')}@example.com`);
    const before = upstream.authorizations.length;
    const { browser, page, exchange } = await authorize();

    const refused = await browser.submit(formTo(page, '/identify'), { email: 'not an address' });
    expect(refused.status).toBe(422);
    expect(refused.html).toContain('Enter your e-mail address, as name@example.com.');

    const next = await browser.submit(formTo(refused, '/identify'), { email: person.email });
    expect(next.status).toBe(200);
    const login = formTo(next, '/login');
    expect(login.fields.email).toBe(person.email);
    expect(next.html).toContain('/email-code');
    expect(next.html).toContain('Sign in with a passkey');
    expect(upstream.authorizations.length).toBe(before);

    const claims = (await exchange(await browser.submit(login, { password: person.password }))).claims()!;
    expect(claims.sub).toBe(String(person.id));
  });

  it('refuses a form posted without the page CSRF value', async () => {
    await organization(uniqueDomain(), {});
    const { browser, page } = await authorize();
    const form = formTo(page, '/identify');
    const res = await browser.request(form.action, { form: { email: 'someone@example.com', csrf: 'forged' } });
    expect(res.status).toBe(403);
  });
});

describe('sso_required', () => {
  /** A person with a password whose verified address is at the domain of an organisation that requires its provider. */
  async function bound() {
    const domain = uniqueDomain();
    const person = await verifiedUser(t, `${randomBytes(3).toString('hex')}@${domain}`);
    const org = await organization(domain, { sso_required: true });
    return { person, ...org };
  }

  it('refuses password sign-in through the API and the hosted page, naming the provider', async () => {
    const { person } = await bound();
    const login = await t.post('/api/auth/login/json', { email: person.email, password: person.password });
    expectError(login, 403, 'SSO_REQUIRED');
    expect(login.body.error.provider).toBe('acme-okta');

    // The hosted page's own password form (a person who skipped the first step): refused, and only the provider offered.
    const { browser, page } = await authorize();
    const next = await browser.submit(formTo(page, '/identify'), { email: `nobody@${uniqueDomain()}` });
    const refused = await browser.submit(formTo(next, '/login'), { email: person.email, password: person.password });
    expect(refused.status).toBe(403);
    expect(refused.html).toContain('Acme Okta');
    expect(refused.html).toContain('/provider/acme-okta');
    expect(formsOf(refused).some((form) => form.action.endsWith('/login'))).toBe(false);
    expect(refused.html).not.toContain('/provider/elsewhere');
  });

  it('refuses a code sent by e-mail', async () => {
    const { person } = await bound();
    expect((await t.post('/api/auth/email-code', { email: person.email })).status).toBe(202);
    const mail = await smtp.waitFor((m) => m.to.includes(person.email) && m.subject === SIGN_IN_SUBJECT);
    const code = /^ {4}(\d{6})$/m.exec(mail.text)![1];
    const res = await t.post('/api/auth/email-code/verify', { email: person.email, code });
    expectError(res, 403, 'SSO_REQUIRED');
    expect(res.body.error.provider).toBe('acme-okta');
  });

  it('refuses another provider that vouches for the address, then lets the person in through the organisation provider', async () => {
    const { person } = await bound();
    upstream.person = { sub: `other-${randomUUID()}`, email: person.email, email_verified: true };
    const { browser, page, exchange } = await authorize();
    const other = /<a href="([^"]*\/provider\/elsewhere)">Elsewhere<\/a>/.exec(page.html);
    expect(other).not.toBeNull();
    const atOther = await browser.open(new URL(other![1], page.url).href);
    expect(providerOf(atOther)).toBe('elsewhere');
    const refused = await throughProvider(browser, atOther);
    expect(refused.status).toBe(403);
    expect(refused.html).toContain('Your organization signs you in through its identity provider: sign in with Acme Okta.');

    // The same person, through the organisation's provider: signed in to their account.
    upstream.person = { sub: `acme-${randomUUID()}`, email: person.email, email_verified: true };
    const link = /<a href="([^"]*\/provider\/acme-okta)">/.exec(refused.html)![1];
    const atAcme = await browser.open(new URL(link, refused.url).href);
    expect(providerOf(atAcme)).toBe('acme-okta');
    const back = await throughProvider(browser, atAcme);
    const claims = (await exchange(back)).claims()!;
    expect(claims).toMatchObject({ sub: String(person.id), amr: ['fed'] });
  });
});
