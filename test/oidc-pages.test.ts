import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { Secret, TOTP } from 'otpauth';
import { startTestApp, type TestContext } from './support/app.js';
import { auditRows } from './support/audit.js';
import { FormBrowser, formTo, formsOf, type Page } from './support/hosted-pages.js';
import { freePort } from './support/net.js';
import { startSmtpServer, type TestSmtpServer } from './support/smtp.js';
import { startUpstreamIssuer, type UpstreamIssuer } from './support/upstream-issuer.js';

// The hosted sign-in pages of the service's OpenID Connect provider, over HTTP: openid-client is the
// relying party, and a browser without JavaScript (a cookie jar and the pages' own forms) is the
// person signing in. ID tokens are checked with jose against the published JWKS.

type OpenIdClient = typeof import('openid-client');
type Jose = typeof import('jose');

const BRAND = 'Example Accounts';
/** The applications' redirect URIs (loopback, as for development): never opened, the test reads the code off the address. */
const REDIRECT = 'http://localhost/app/callback';
const LOGGED_OUT = 'http://localhost/app/signed-out';
const MAX_FAILURES = 3;

const STEP_MS = 30_000;
const midStep = (ms: number) => Math.floor(ms / STEP_MS) * STEP_MS + STEP_MS / 2;
let clock = midStep(Date.now());
const codeFor = (secret: string, atMs = clock) =>
  new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp: atMs });

interface RegisteredClient {
  id: string;
  secret?: string;
}

describe('hosted sign-in pages of the OpenID Connect provider', () => {
  let t: TestContext;
  let server: Server;
  let origin: string;
  let oidc: OpenIdClient;
  let jose: Jose;
  let confidential: RegisteredClient;
  let firstPartyPublic: RegisteredClient;
  let upstream: UpstreamIssuer;
  let smtp: TestSmtpServer;

  beforeAll(async () => {
    oidc = await import('openid-client');
    upstream = await startUpstreamIssuer();
    smtp = await startSmtpServer();
    jose = await import('jose');
    // The issuer is APP_URL: the app listens where APP_URL says, so that discovery's issuer is where it was read.
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    const limits = { RATE_LIMIT_ENABLED: 'true', AUTH_RATE_LIMIT_PER_MINUTE: '100000', RATE_LIMIT_PER_MINUTE: '100000' };
    t = await startTestApp(
      {
        APP_URL: origin,
        BRAND_NAME: BRAND,
        LOGIN_MAX_FAILURES: String(MAX_FAILURES),
        SMTP_URL: smtp.url,
        MAIL_POLL_INTERVAL_MS: '100',
        ...limits,
      },
      { clock: () => clock },
    );
    const handle = t.app.koa.callback();
    server = createServer((req, res) => void handle(req, res));
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    const admin = await t.adminToken();
    const corp = {
      slug: 'corp',
      name: 'Corp',
      client_id: upstream.clientId,
      client_secret: upstream.clientSecret,
      issuer: upstream.issuer,
    };
    expect((await t.post('/api/identity-providers', corp, { token: admin })).status).toBe(201);
    const register = async (input: Record<string, unknown>): Promise<RegisteredClient> => {
      const res = await t.post('/api/oauth/clients', input, { token: admin });
      expect(res.status).toBe(201);
      return { id: res.body.data.client_id, secret: res.body.data.client_secret };
    };
    confidential = await register({
      name: 'Reports',
      type: 'confidential',
      redirect_uris: [REDIRECT],
      post_logout_redirect_uris: [LOGGED_OUT],
      scopes: ['openid', 'profile', 'email', 'offline_access'],
    });
    firstPartyPublic = await register({
      name: 'Team app',
      type: 'public',
      redirect_uris: [REDIRECT],
      post_logout_redirect_uris: [LOGGED_OUT],
      first_party: true,
    });
  });

  afterAll(async () => {
    if (server?.listening) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    await t?.close();
    await upstream?.close();
    await smtp?.close();
  });

  beforeEach(() => {
    clock = midStep(Date.now());
  });

  const relyingParty = (client: RegisteredClient) =>
    oidc.discovery(new URL(origin), client.id, undefined, client.secret ? oidc.ClientSecretBasic(client.secret) : oidc.None(), {
      execute: [oidc.allowInsecureRequests],
    });

  /** An authorization request of `client`, opened in `browser`: the page it leads to, and what the code's exchange needs. */
  async function authorize(browser: FormBrowser, client: RegisteredClient, extra: Record<string, string> = {}) {
    const config = await relyingParty(client);
    const verifier = oidc.randomPKCECodeVerifier();
    const [state, nonce] = [oidc.randomState(), oidc.randomNonce()];
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid profile email',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
      ...extra,
    });
    const page = await browser.open(url.href);
    const exchange = (callback: Page) =>
      oidc.authorizationCodeGrant(config, new URL(callback.url), {
        pkceCodeVerifier: verifier,
        expectedState: state,
        expectedNonce: nonce,
      });
    return { config, page, state, nonce, exchange };
  }

  const signInWith = (browser: FormBrowser, page: Page, email: string, password: string) =>
    browser.submit(formTo(page, '/login'), { email, password });

  /** Where the flow left the service: the application's redirect URI and its parameters. */
  function landed(page: Page): URLSearchParams {
    expect(page.status).toBe(0);
    const url = new URL(page.url);
    expect(`${url.origin}${url.pathname}`).toBe(REDIRECT);
    return url.searchParams;
  }

  const sessionsOf = async (access: string) => (await t.get('/api/auth/sessions', { token: access })).body.data as Array<{ id: string }>;

  it('signs a person in with a password, asks for consent in plain words, and gives the application verifiable tokens', async () => {
    const user = await t.register({ name: 'Ada Lovelace' });
    const browser = new FormBrowser(origin);
    const { page, nonce, exchange, config } = await authorize(browser, confidential);

    expect(page.status).toBe(200);
    expect(page.url).toMatch(new RegExp(`^${origin}/oauth2/interaction/[\\w-]+$`));
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const policy = page.headers.get('content-security-policy')!;
    expect(policy).toContain("default-src 'none'");
    expect(policy).toMatch(/script-src 'sha256-[\w+/=]+'/);
    expect(policy).not.toContain('unsafe-inline');
    expect(page.html).toContain(`<header>${BRAND}</header>`);
    expect(page.html).toContain('Sign in to continue to <strong>Reports</strong>');
    for (const id of ['email', 'password']) expect(page.html).toContain(`<label for="${id}">`);
    expect(page.html).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">');

    const before = await sessionsOf(user.access);
    const consent = await signInWith(browser, page, user.email, user.password);
    expect(consent.status).toBe(200);
    expect(consent.html).toContain('<strong>Reports</strong> asks to:');
    expect(consent.html).toContain('<li>See your name</li>');
    expect(consent.html).toContain('<li>See your e-mail address, and whether it is confirmed</li>');
    const back = await browser.submit(formTo(consent, '/consent'), { decision: 'allow' });
    const params = landed(back);
    expect(params.get('iss')).toBe(origin);

    const tokens = await exchange(back);
    const JWKS = jose.createRemoteJWKSet(new URL(`${origin}/.well-known/jwks.json`));
    const { payload, protectedHeader } = await jose.jwtVerify(tokens.id_token!, JWKS, { issuer: origin, audience: confidential.id });
    expect(['RS256', 'ES256']).toContain(protectedHeader.alg);
    expect(payload).toMatchObject({ sub: String(user.id), nonce, amr: ['pwd'] });
    expect(payload.exp! * 1000).toBeGreaterThan(Date.now());
    expect(typeof payload.auth_time).toBe('number');

    const info = await oidc.fetchUserInfo(config, tokens.access_token, String(user.id));
    expect(info).toMatchObject({ sub: String(user.id), email: user.email, email_verified: false, name: 'Ada Lovelace' });

    // A service session opened for the sign-in, beside the one registration opened, with the audit trail of a login.
    const after = await sessionsOf(user.access);
    expect(after).toHaveLength(before.length + 1);
    const opened = after.find((s) => !before.some((b) => b.id === s.id))!;
    const succeeded = await auditRows(t, user.id, 'login.succeeded');
    expect(succeeded.at(-1)!.details).toMatchObject({ session_id: opened.id });
  });

  it('skips consent for a first-party public client, and honours prompt=none, prompt=login and max_age', async () => {
    const user = await t.register();
    const browser = new FormBrowser(origin);
    const first = await authorize(browser, firstPartyPublic);
    const tokens = await first.exchange(await signInWith(browser, first.page, user.email, user.password));
    expect(tokens.id_token).toBeDefined();

    // Signed in at the provider: prompt=none answers at once, without a page.
    const quiet = await authorize(browser, firstPartyPublic, { prompt: 'none' });
    expect((await quiet.exchange(quiet.page)).claims()!.sub).toBe(String(user.id));

    // A browser that never signed in gets login_required, not a page.
    const stranger = await authorize(new FormBrowser(origin), firstPartyPublic, { prompt: 'none' });
    expect(landed(stranger.page).get('error')).toBe('login_required');

    for (const extra of [{ prompt: 'login' }, { max_age: '0' }] as Array<Record<string, string>>) {
      const again = await authorize(browser, firstPartyPublic, extra);
      expect(again.page.status).toBe(200);
      expect(again.page.html).toContain('Team app asks you to sign in again.');
      const claims = (await again.exchange(await signInWith(browser, again.page, user.email, user.password))).claims()!;
      expect(claims.sub).toBe(String(user.id));
    }
  });

  it('signs a person in with a sign-in provider and comes back to the interaction', async () => {
    const email = `corp-${randomUUID()}@example.com`;
    upstream.person = { sub: `corp-${randomUUID()}`, email, email_verified: true, name: 'Grace Hopper' };
    const browser = new FormBrowser(origin);
    const { page, exchange } = await authorize(browser, firstPartyPublic);
    const link = /<a href="([^"]*\/provider\/corp)">Corp<\/a>/.exec(page.html);
    expect(link).not.toBeNull();

    // To the provider, which signs the person in at once and sends them back to the service's callback.
    const atProvider = await browser.open(new URL(link![1], page.url).href);
    expect(atProvider.url.startsWith(`${upstream.issuer}/authorize?`)).toBe(true);
    const answer = await fetch(atProvider.url, { redirect: 'manual' });
    const back = await browser.open(answer.headers.get('location')!);

    const claims = (await exchange(back)).claims()!;
    const user = await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow();
    expect(claims).toMatchObject({ sub: String(user.id), amr: ['fed'] });
    expect(browser.has('oidc_provider_flow')).toBe(false);
  });

  it('asks for the code mailed to an address the sign-in provider did not vouch for, and makes no account before it', async () => {
    const email = `corp-${randomUUID()}@example.com`;
    upstream.person = { sub: `corp-${randomUUID()}`, email, email_verified: false, name: 'Mallory' };
    const browser = new FormBrowser(origin);
    const { page, exchange } = await authorize(browser, firstPartyPublic);
    const atProvider = await browser.open(new URL(/<a href="([^"]*\/provider\/corp)">Corp<\/a>/.exec(page.html)![1], page.url).href);
    const answer = await fetch(atProvider.url, { redirect: 'manual' });
    const asked = await browser.open(answer.headers.get('location')!);
    expect(asked.status).toBe(200);
    expect(asked.html).toContain('Confirm your e-mail address');
    expect(await t.db.selectFrom('users').select('id').where('email', '=', email).execute()).toEqual([]);
    const mail = await smtp.waitFor((m) => m.to.includes(email) && m.subject === 'Your code to confirm your e-mail address');
    const code = /^ {4}(\d{6})$/m.exec(mail.text)![1];

    const wrong = await browser.submit(formTo(asked, '/provider-verify'), { code: code === '000000' ? '111111' : '000000' });
    expect(wrong.status).toBe(400);
    expect(wrong.html).toContain('That code is not right, or it has expired.');
    expect(await t.db.selectFrom('users').select('id').where('email', '=', email).execute()).toEqual([]);
    const claims = (await exchange(await browser.submit(formTo(wrong, '/provider-verify'), { code }))).claims()!;
    const user = await t.db.selectFrom('users').select(['id', 'email_verified']).where('email', '=', email).executeTakeFirstOrThrow();
    expect(user.email_verified).toBe(true);
    expect(claims).toMatchObject({ sub: String(user.id), amr: ['fed'] });
  });

  it('signs a person in with a code sent by e-mail', async () => {
    const user = await t.register();
    const browser = new FormBrowser(origin);
    const { page, exchange } = await authorize(browser, firstPartyPublic);
    const ask = await browser.open(new URL(/<a href="([^"]*\/email-code)">/.exec(page.html)![1], page.url).href);
    const enter = await browser.submit(formTo(ask, '/email-code'), { email: user.email });
    expect(enter.status).toBe(200);
    expect(enter.html).toContain('If this address can sign in, a six-digit code is on its way to it.');
    const mail = await smtp.waitFor((m) => m.to.includes(user.email) && m.subject === 'Your sign-in code');
    const code = /^ {4}(\d{6})$/m.exec(mail.text)![1];

    const wrong = await browser.submit(formTo(enter, '/email-code/verify'), { code: code === '000000' ? '111111' : '000000' });
    expect(wrong.status).toBe(400);
    expect(wrong.html).toContain('That code is not right, or it has expired.');
    const claims = (await exchange(await browser.submit(formTo(wrong, '/email-code/verify'), { code }))).claims()!;
    expect(claims).toMatchObject({ sub: String(user.id), amr: ['otp'] });
  });

  it('sends access_denied back when the person denies consent or cancels', async () => {
    const user = await t.register();
    const browser = new FormBrowser(origin);
    const { page, state } = await authorize(browser, confidential);
    const consent = await signInWith(browser, page, user.email, user.password);
    const denied = landed(await browser.submit(formTo(consent, '/consent'), { decision: 'deny' }));
    expect(denied.get('error')).toBe('access_denied');
    expect(denied.get('state')).toBe(state);

    const other = new FormBrowser(origin);
    const cancelled = await authorize(other, confidential);
    const back = landed(await other.submit(formTo(cancelled.page, '/abort')));
    expect(back.get('error')).toBe('access_denied');
    expect(back.get('state')).toBe(cancelled.state);
  });

  it('passes a user with TOTP through the second step on the page, by code and by recovery code', async () => {
    const user = await t.register();
    const api = t.clientFor(user.access);
    const started = await api.POST('/api/auth/mfa/totp', { body: { name: 'Phone' } });
    const { factor_id: factorId, secret } = started.data!.data;
    const confirmed = await api.POST('/api/auth/mfa/totp/{id}/confirm', {
      params: { path: { id: factorId } },
      body: { code: codeFor(secret) },
    });
    const recoveryCode = confirmed.data!.data.recovery_codes![0];
    // The confirmation spent this time step's code: the sign-in happens in the next one.
    clock += STEP_MS;

    const browser = new FormBrowser(origin);
    const { page, exchange } = await authorize(browser, firstPartyPublic);
    const second = await signInWith(browser, page, user.email, user.password);
    expect(second.status).toBe(200);
    expect(second.html).toContain('<label for="totp_code">Code from your authenticator app</label>');
    expect(second.html).toContain('<label for="recovery_code_code">Recovery code</label>');

    const totpForm = (page: Page) => formsOf(page).find((f) => f.fields.method === 'totp')!;
    const wrong = await browser.submit(totpForm(second), { code: codeFor(secret) === '000000' ? '111111' : '000000' });
    expect(wrong.status).toBe(401);
    expect(wrong.html).toContain('That code is not right');
    const claims = (await exchange(await browser.submit(totpForm(wrong), { code: codeFor(secret) }))).claims()!;
    expect(claims).toMatchObject({ sub: String(user.id), amr: expect.arrayContaining(['pwd', 'otp', 'mfa']) });
    expect((await auditRows(t, user.id, 'mfa.verified')).length).toBe(1);
    expect(browser.has('oidc_second_step')).toBe(false);

    // Signing in again (prompt=login) with a recovery code instead.
    const again = await authorize(browser, firstPartyPublic, { prompt: 'login' });
    const step = await signInWith(browser, again.page, user.email, user.password);
    const recovery = formsOf(step).find((f) => f.fields.method === 'recovery_code')!;
    const recovered = (await again.exchange(await browser.submit(recovery, { code: recoveryCode }))).claims()!;
    expect(recovered).toMatchObject({ sub: String(user.id), amr: expect.arrayContaining(['pwd', 'otp', 'mfa']) });
    expect((await auditRows(t, user.id, 'mfa.recovery_code_used')).length).toBe(1);
  });

  it('refuses a form posted from another site or without its CSRF value, and opens no session', async () => {
    const user = await t.register();
    const browser = new FormBrowser(origin);
    const { page } = await authorize(browser, firstPartyPublic);
    const form = formTo(page, '/login');
    const values = { email: user.email, password: user.password };

    const crossSite = await browser.submit(form, values, { origin: 'http://evil.example' });
    expect(crossSite.status).toBe(403);
    expect(crossSite.html).toContain('This form could not be accepted');
    // From a sandboxed frame, or under no-referrer, the origin is "null": the browser's Sec-Fetch-Site decides.
    const opaque = await browser.submit(form, values, { origin: 'null', 'sec-fetch-site': 'cross-site' });
    expect(opaque.status).toBe(403);
    const forged = await browser.submit({ ...form, fields: { ...form.fields, csrf: 'forged' } }, values);
    expect(forged.status).toBe(403);
    // The attacker's own browser holds a valid value for its own cookie, not for the victim's.
    const attacker = new FormBrowser(origin);
    const attackerForm = formTo((await authorize(attacker, firstPartyPublic)).page, '/login');
    const replayed = await browser.submit({ ...form, fields: { ...form.fields, csrf: attackerForm.fields.csrf } }, values);
    expect(replayed.status).toBe(403);

    expect(await auditRows(t, user.id, 'login.succeeded')).toEqual([]);
    expect(await sessionsOf(user.access)).toHaveLength(1);
  });

  it('says a password is wrong without saying whether the address has an account, and shares the lockout with the API', async () => {
    const user = await t.register();
    const browser = new FormBrowser(origin);
    let { page } = await authorize(browser, firstPartyPublic);

    const unknown = await signInWith(browser, page, `nobody-${randomUUID()}@example.com`, 'whatever-password');
    const wrong = await signInWith(browser, unknown, user.email, 'wrong-password-1');
    expect(unknown.status).toBe(401);
    expect(wrong.status).toBe(401);
    const alert = (p: Page) => /<p class="notice error" role="alert">([^<]*)<\/p>/.exec(p.html)?.[1];
    expect(alert(wrong)).toBe('The e-mail address or the password is not right. Check both and try again.');
    expect(alert(unknown)).toBe(alert(wrong));
    // The address typed stays in the field; the password does not.
    expect(formTo(wrong, '/login').fields).toMatchObject({ email: user.email, password: '' });

    // Failures on the page and through the API count together.
    page = await signInWith(browser, wrong, user.email, 'wrong-password-2');
    expect((await t.post('/api/auth/login/json', { email: user.email, password: 'wrong-password-3' })).status).toBe(401);
    const locked = await t.post('/api/auth/login/json', { email: user.email, password: user.password });
    expect(locked.status).toBe(429);
    const lockedPage = await signInWith(browser, page, user.email, user.password);
    expect(lockedPage.status).toBe(429);
    expect(alert(lockedPage)).toMatch(/^Too many failed sign-ins to this account from this client: locked out for \d+ minutes\. Wait/);
    expect(lockedPage.headers.get('retry-after')).toMatch(/^\d+$/);
    const failed = await auditRows(t, user.id, 'login.failed');
    expect(failed.length).toBeGreaterThanOrEqual(MAX_FAILURES);
  });

  it('logs out at the provider after asking, and sends the person back to the application', async () => {
    const user = await t.register();
    const browser = new FormBrowser(origin);
    const { page, exchange, config } = await authorize(browser, firstPartyPublic);
    const tokens = await exchange(await signInWith(browser, page, user.email, user.password));

    const ask = await browser.open(
      oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: LOGGED_OUT }).href,
    );
    expect(ask.status).toBe(200);
    expect(ask.html).toContain('Do you want to sign out of Example Accounts');
    expect(ask.headers.get('content-security-policy')).toContain("form-action 'self' http://localhost");
    const form = formsOf(ask).find((f) => f.fields.xsrf !== undefined)!;
    const out = await browser.submit(form, { logout: 'yes' });
    expect(out.status).toBe(0);
    expect(out.url.startsWith(LOGGED_OUT)).toBe(true);

    const after = await authorize(browser, firstPartyPublic, { prompt: 'none' });
    expect(landed(after.page).get('error')).toBe('login_required');
  });

  it('shows its own page for an interaction that is unknown or gone, and for a request the provider refuses', async () => {
    const page = await new FormBrowser(origin).open('/oauth2/interaction/not-a-real-one');
    expect(page.status).toBeGreaterThanOrEqual(400);
    expect(page.html).toContain('This sign-in is no longer under way');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");

    // A request the provider cannot send back to any application: its own error page, in the pages' look.
    const refused = await new FormBrowser(origin).open(
      `/oauth2/authorize?client_id=nobody&response_type=code&scope=openid&redirect_uri=${encodeURIComponent(REDIRECT)}`,
    );
    expect(refused.status).toBe(400);
    expect(refused.html).toContain('<h1>Something went wrong</h1>');
    expect(refused.html).toContain('<code>invalid_client</code>');
    expect(refused.headers.get('content-security-policy')).toContain("default-src 'none'");
  });
});
