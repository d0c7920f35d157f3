import type { Server } from 'node:http';
import { sql } from 'kysely';
import { Secret, TOTP } from 'otpauth';
import { startTestApp, type RegisteredUser, type StartOptions, type TestContext } from './support/app.js';
import { FormBrowser, formTo, formsOf, type Page } from './support/hosted-pages.js';
import { freePort } from './support/net.js';

// The device authorization grant (RFC 8628) of the service's OpenID Connect provider, with
// openid-client (a certified relying party) as the command-line tool: it asks at /oauth2/device/auth,
// shows the user code, and polls the token endpoint; the person opens /oauth2/device in a browser
// without JavaScript, enters the code, signs in on the hosted pages and allows the application.

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/** The clock the app reads TOTP codes against: moved a step on, so that a code is not one already spent. */
const STEP_MS = 30_000;
let clock = Math.floor(Date.now() / STEP_MS) * STEP_MS + STEP_MS / 2;
const codeFor = (secret: string) =>
  new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp: clock });

interface Running {
  t: TestContext;
  base: string;
  admin: string;
  close(): Promise<void>;
}

/** An app whose issuer is its own address, as openid-client checks. */
async function startProvider(env: Record<string, string> = {}, options: StartOptions = {}): Promise<Running> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const t = await startTestApp({ APP_URL: base, ...env }, options);
  const server: Server = t.app.koa.listen(port, '127.0.0.1');
  return {
    t,
    base,
    admin: await t.adminToken(),
    async close() {
      server.close();
      server.closeAllConnections();
      await t.close();
    },
  };
}

let oidc: any;
let p: Running;
let t: TestContext;
let base: string;

beforeAll(async () => {
  oidc = await import('openid-client');
  p = await startProvider({}, { clock: () => clock });
  ({ t, base } = p);
});
afterAll(() => p?.close());

type Client = { client_id: string; client_secret?: string; [key: string]: unknown };

async function newClient(running: Running, body: Record<string, unknown>): Promise<Client> {
  const res = await running.t.post('/api/oauth/clients', body, { token: running.admin });
  expect(res.status).toBe(201);
  return res.body.data as Client;
}

/** A command-line tool: a public client with the device grant and refresh tokens, and no redirect URI. */
const deviceClient = (running: Running = p, extra: Record<string, unknown> = {}) =>
  newClient(running, { name: 'Deploy CLI', type: 'public', grant_types: [DEVICE_GRANT, 'refresh_token'], ...extra });

async function configFor(running: Running, client: Client) {
  return oidc.discovery(
    new URL(running.base),
    client.client_id,
    client.client_secret,
    client.client_secret === undefined ? oidc.None() : undefined,
    { execute: [oidc.allowInsecureRequests] },
  );
}

/** The OAuth error an openid-client call is refused with. */
async function oauthError(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as { error?: string }).error ?? String(error);
  }
  throw new Error('expected the call to be refused');
}

/** One poll of the token endpoint with a device code, as a device sends it. */
const poll = (running: Running, client: Client, deviceCode: string) =>
  running.t.post('/oauth2/token', { grant_type: DEVICE_GRANT, device_code: deviceCode, client_id: client.client_id }, { form: true });

type DeviceRecords = {
  oidc_records: { model: string; id: string; payload: any; polled_at: Date | null; poll_interval_seconds: number | null };
};
const deviceRecord = (running: Running, deviceCode: string) =>
  running.t.db
    .withTables<DeviceRecords>()
    .selectFrom('oidc_records')
    .selectAll()
    .where('model', '=', 'DeviceCode')
    .where('id', '=', deviceCode)
    .executeTakeFirstOrThrow();

/** The device's last poll, moved `seconds` into the past (as if it had waited that long since). */
const lastPollAgo = (running: Running, deviceCode: string, seconds: number) =>
  running.t.db
    .withTables<DeviceRecords>()
    .updateTable('oidc_records')
    .set({ polled_at: sql<Date>`now() - make_interval(secs => ${seconds})` })
    .where('model', '=', 'DeviceCode')
    .where('id', '=', deviceCode)
    .execute();

/** The page's one notice (the text above its form). */
const noticeOf = (page: Page) => /<p class="notice (?:error|success)"[^>]*>([\s\S]*?)<\/p>/.exec(page.html)?.[1];

/** Enters `userCode` on the page and confirms it: the page the confirmation leads to (the sign-in page). */
async function enterCode(browser: FormBrowser, userCode: string): Promise<Page> {
  const page = await browser.open('/oauth2/device');
  const confirm = await browser.submit(formTo(page, '/oauth2/device'), { user_code: userCode });
  expect(confirm.status).toBe(200);
  return browser.submit(formTo(confirm, '/oauth2/device'), { confirm: 'yes' });
}

/** Signs in as `who` on the hosted sign-in page, and answers the consent page with `decision`. */
async function signInAndDecide(browser: FormBrowser, page: Page, who: RegisteredUser, decision: 'allow' | 'deny'): Promise<Page> {
  expect(new URL(page.url).pathname).toMatch(/^\/oauth2\/interaction\//);
  const consent = await browser.submit(formTo(page, '/login'), { email: who.email, password: who.password });
  expect(consent.status).toBe(200);
  expect(consent.html).toContain('Deploy CLI');
  return browser.submit(formTo(consent, '/consent'), { decision });
}

describe('discovery', () => {
  it('advertises the device authorization endpoint and exactly the grants that are on', async () => {
    const res = await t.get('/.well-known/openid-configuration');
    expect(res.status).toBe(200);
    expect(res.body.device_authorization_endpoint).toBe(`${base}/oauth2/device/auth`);
    expect([...res.body.grant_types_supported].sort()).toEqual(
      ['authorization_code', 'client_credentials', 'refresh_token', DEVICE_GRANT].sort(),
    );
  });
});

describe('clients', () => {
  it('takes the device grant in grant_types, without a redirect URI, and with refresh_token', async () => {
    const client = await deviceClient();
    expect(client).toMatchObject({ grant_types: [DEVICE_GRANT, 'refresh_token'], redirect_uris: [], type: 'public' });
    const read = await t.get(`/api/oauth/clients/${client.client_id}`, { token: p.admin });
    expect(read.body.data.grant_types).toEqual([DEVICE_GRANT, 'refresh_token']);
    // refresh_token alone is still refused: it comes with a grant that signs a person in.
    const refused = await t.post(
      '/api/oauth/clients',
      { name: 'Refresh only', type: 'public', grant_types: ['refresh_token'] },
      { token: p.admin },
    );
    expect(refused.status).toBe(422);
    // An unknown grant is refused by the contract.
    const unknown = await t.post('/api/oauth/clients', { name: 'Password', type: 'public', grant_types: ['password'] }, { token: p.admin });
    expect(unknown.status).toBe(422);
  });
});

describe('a device sign-in', () => {
  it('signs the person in on the page, and the device polls its tokens, which work at userinfo', async () => {
    const client = await deviceClient();
    const config = await configFor(p, client);
    const who = await t.register();

    const device = await oidc.initiateDeviceAuthorization(config, { scope: 'openid profile email offline_access' });
    expect(device).toMatchObject({
      verification_uri: `${base}/oauth2/device`,
      verification_uri_complete: `${base}/oauth2/device?user_code=${encodeURIComponent(device.user_code)}`,
      expires_in: 600,
      interval: 5,
    });
    expect(device.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);

    // The person opens the link the device shows: the code is filled in, and the page runs no script.
    const browser = new FormBrowser(base);
    const page = await browser.open(device.verification_uri_complete);
    expect(page.status).toBe(200);
    expect(page.html).not.toContain('<script');
    expect(page.html).toContain('<label for="user_code">Code from your device</label>');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(page.headers.get('content-security-policy')).not.toContain('unsafe-inline');
    const form = formTo(page, '/oauth2/device');
    expect(form.fields.user_code).toBe(device.user_code);

    // The confirmation names the application and shows the code to check against the device.
    const confirm = await browser.submit(form);
    expect(confirm.status).toBe(200);
    expect(confirm.html).toContain('<strong>Deploy CLI</strong> asks to sign in');
    expect(confirm.html).toContain(device.user_code);
    expect(confirm.headers.get('content-security-policy')).toContain("form-action 'self'");
    // Nothing is given before the person has signed in and allowed it.
    expect((await poll(p, client, device.device_code)).body.error).toBe('authorization_pending');

    const signInPage = await browser.submit(formTo(confirm, '/oauth2/device'), { confirm: 'yes' });
    const done = await signInAndDecide(browser, signInPage, who, 'allow');
    expect(done.status).toBe(200);
    expect(new URL(done.url).pathname).toMatch(/^\/oauth2\/device\/[\w-]+$/);
    expect(done.html).toContain('Device signed in');
    expect(done.html).toContain('go back to your device');

    // The poll right after the one above comes too soon; a pause of the interval gives the tokens.
    await lastPollAgo(p, device.device_code, 6);
    const tokens = await oidc.pollDeviceAuthorizationGrant(config, { ...device, interval: 0.01 });
    expect(tokens.access_token).toEqual(expect.any(String));
    expect(tokens.refresh_token).toEqual(expect.any(String));
    expect(tokens.claims()).toMatchObject({ sub: String(who.id), email: who.email, aud: client.client_id, iss: base });
    const claims = await oidc.fetchUserInfo(config, tokens.access_token, String(who.id));
    expect(claims).toMatchObject({ sub: String(who.id), email: who.email, name: who.name });
    // The service session the sign-in opened is the person's, as with any hosted sign-in.
    const sessions = await t.get('/api/auth/sessions', { token: who.access });
    expect(sessions.body.data).toHaveLength(2);

    // A pause of the interval before the next poll.
    await lastPollAgo(p, device.device_code, 6);
    // Its refresh token works, as any other's.
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token);
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    // The device code is spent: a poll with it again is refused, and ends what it gave (a replay).
    expect((await poll(p, client, device.device_code)).body.error).toBe('invalid_grant');
    expect(await oauthError(oidc.refreshTokenGrant(config, refreshed.refresh_token))).toBe('invalid_grant');
  }, 30_000);

  it('waits the interval between polls with openid-client, which the service answers with the tokens', async () => {
    const client = await newClient(p, { name: 'Deploy CLI', type: 'public', grant_types: [DEVICE_GRANT], first_party: true });
    const config = await configFor(p, client);
    const who = await t.register();
    const device = await oidc.initiateDeviceAuthorization(config, { scope: 'openid email' });
    const browser = new FormBrowser(base);
    const signInPage = await enterCode(browser, device.user_code);
    // A first-party client is not asked for: signing in is enough.
    const done = await browser.submit(formTo(signInPage, '/login'), { email: who.email, password: who.password });
    expect(done.html).toContain('Device signed in');
    const tokens = await oidc.pollDeviceAuthorizationGrant(config, device);
    expect(tokens.claims()).toMatchObject({ sub: String(who.id), email: who.email });
    expect(tokens.refresh_token).toBeUndefined();
  }, 30_000);
});

describe('a device sign-in with a second factor', () => {
  it('asks for the second step on the same pages, and the tokens say so (acr aal2, amr otp)', async () => {
    const who = await t.register();
    const api = t.clientFor(who.access);
    const started = await api.POST('/api/auth/mfa/totp', { body: { name: 'Phone' } });
    const { factor_id: factorId, secret } = started.data!.data;
    await api.POST('/api/auth/mfa/totp/{id}/confirm', { params: { path: { id: factorId } }, body: { code: codeFor(secret) } });
    clock += STEP_MS;

    const client = await deviceClient();
    const config = await configFor(p, client);
    const device = await oidc.initiateDeviceAuthorization(config, { scope: 'openid email' });
    const browser = new FormBrowser(base);
    const signInPage = await enterCode(browser, device.user_code);
    const second = await browser.submit(formTo(signInPage, '/login'), { email: who.email, password: who.password });
    expect(second.html).toContain('<label for="totp_code">Code from your authenticator app</label>');
    // Nothing is given on the password alone.
    expect((await poll(p, client, device.device_code)).body.error).toBe('authorization_pending');
    const totp = formsOf(second).find((form) => form.fields.method === 'totp')!;
    const consent = await browser.submit(totp, { code: codeFor(secret) });
    const done = await browser.submit(formTo(consent, '/consent'), { decision: 'allow' });
    expect(done.html).toContain('Device signed in');

    await lastPollAgo(p, device.device_code, 6);
    const tokens = await oidc.pollDeviceAuthorizationGrant(config, { ...device, interval: 0.01 });
    expect(tokens.claims()).toMatchObject({ sub: String(who.id), acr: 'aal2', amr: expect.arrayContaining(['pwd', 'otp']) });
  }, 30_000);
});

describe('polling', () => {
  it('answers a poll sooner than the interval with slow_down, and adds 5 seconds to it each time', async () => {
    const client = await deviceClient();
    const device = await oidc.initiateDeviceAuthorization(await configFor(p, client), { scope: 'openid' });
    expect((await poll(p, client, device.device_code)).body.error).toBe('authorization_pending');
    const tooSoon = await poll(p, client, device.device_code);
    expect(tooSoon.status).toBe(400);
    expect(tooSoon.body).toEqual({ error: 'slow_down', error_description: expect.any(String) });
    expect((await deviceRecord(p, device.device_code)).poll_interval_seconds).toBe(10);
    expect((await poll(p, client, device.device_code)).body.error).toBe('slow_down');
    expect((await deviceRecord(p, device.device_code)).poll_interval_seconds).toBe(15);

    // 12 seconds after the last poll is still too soon for an interval of 15 (which becomes 20); 21 is not.
    await lastPollAgo(p, device.device_code, 12);
    expect((await poll(p, client, device.device_code)).body.error).toBe('slow_down');
    expect((await deviceRecord(p, device.device_code)).poll_interval_seconds).toBe(20);
    await lastPollAgo(p, device.device_code, 21);
    expect((await poll(p, client, device.device_code)).body.error).toBe('authorization_pending');
    expect((await deviceRecord(p, device.device_code)).poll_interval_seconds).toBe(20);
  });

  it('refuses a device code to another client than its own', async () => {
    const client = await deviceClient();
    const other = await deviceClient();
    const device = await oidc.initiateDeviceAuthorization(await configFor(p, client), { scope: 'openid' });
    const res = await poll(p, other, device.device_code);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_grant');
  });
});

describe('refusals', () => {
  it('tells the device access_denied when the person denies the application', async () => {
    const client = await deviceClient();
    const device = await oidc.initiateDeviceAuthorization(await configFor(p, client), { scope: 'openid email' });
    const browser = new FormBrowser(base);
    const page = await signInAndDecide(browser, await enterCode(browser, device.user_code), await t.register(), 'deny');
    expect(page.status).toBe(200);
    expect(noticeOf(page)).toContain('The device was not signed in');
    const res = await poll(p, client, device.device_code);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('access_denied');
    // The code was answered: entering it again is refused.
    const again = await browser.submit(formTo(await browser.open('/oauth2/device'), '/oauth2/device'), { user_code: device.user_code });
    expect(again.status).toBe(400);
    expect(noticeOf(again)).toContain('used already');
  });

  it('tells the device access_denied when the person cancels on the confirmation page', async () => {
    const client = await deviceClient();
    const device = await oidc.initiateDeviceAuthorization(await configFor(p, client), { scope: 'openid' });
    const browser = new FormBrowser(base);
    const page = await browser.open(device.verification_uri_complete);
    const confirm = await browser.submit(formTo(page, '/oauth2/device'));
    const cancelled = await browser.submit(formTo(confirm, '/oauth2/device'), { abort: 'yes' });
    expect(cancelled.status).toBe(200);
    expect(noticeOf(cancelled)).toContain('The device was not signed in');
    expect((await poll(p, client, device.device_code)).body.error).toBe('access_denied');
  });

  it('tells the device access_denied when the person cancels the sign-in', async () => {
    const client = await deviceClient();
    const device = await oidc.initiateDeviceAuthorization(await configFor(p, client), { scope: 'openid' });
    const browser = new FormBrowser(base);
    const signInPage = await enterCode(browser, device.user_code);
    const cancelled = await browser.submit(formTo(signInPage, '/abort'));
    expect(noticeOf(cancelled)).toContain('The device was not signed in');
    expect((await poll(p, client, device.device_code)).body.error).toBe('access_denied');
  });

  it('refuses a client without the grant with unauthorized_client, at both endpoints', async () => {
    const client = await newClient(p, { name: 'Web app', type: 'public', redirect_uris: ['http://127.0.0.1:9/callback'] });
    const config = await configFor(p, client);
    expect(await oauthError(oidc.initiateDeviceAuthorization(config, { scope: 'openid' }))).toBe('unauthorized_client');
    const res = await t.post('/oauth2/device/auth', { client_id: client.client_id, scope: 'openid' }, { form: true });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('unauthorized_client');
    const token = await poll(p, client, 'x'.repeat(43));
    expect(token.status).toBe(400);
    expect(token.body.error).toBe('unauthorized_client');
    const none = await t.db
      .withTables<DeviceRecords>()
      .selectFrom('oidc_records')
      .select('id')
      .where('model', '=', 'DeviceCode')
      .where(sql`payload->>'clientId'`, '=', client.client_id)
      .execute();
    expect(none).toEqual([]);
  });

  it('shows a wrong user code, and no code at all, as an error on the page', async () => {
    const browser = new FormBrowser(base);
    const page = await browser.open('/oauth2/device');
    const wrong = await browser.submit(formTo(page, '/oauth2/device'), { user_code: 'BCDF-GHJK' });
    expect(wrong.status).toBe(400);
    expect(noticeOf(wrong)).toBe('That code is not right. Check the code on your device and enter it again.');
    // The form is there again, with what was typed.
    expect(formTo(wrong, '/oauth2/device').fields.user_code).toBe('BCDF-GHJK');
    const empty = await browser.submit(formTo(wrong, '/oauth2/device'), { user_code: '' });
    expect(empty.status).toBe(422);
    expect(noticeOf(empty)).toBe('Enter the code your device shows.');
  });

  it('refuses a form the page did not give this browser', async () => {
    const client = await deviceClient();
    const device = await oidc.initiateDeviceAuthorization(await configFor(p, client), { scope: 'openid' });
    const stranger = new FormBrowser(base);
    const page = await stranger.request('/oauth2/device', { form: { xsrf: 'forged', user_code: device.user_code, confirm: 'yes' } });
    expect(page.status).toBe(403);
    expect(noticeOf(page)).toContain('This form could not be accepted');
    expect(formsOf(page)).toEqual([]);
    // A browser whose provider session is gone.
    const gone = await stranger.request('/oauth2/device', {
      form: { xsrf: 'forged', user_code: device.user_code, confirm: 'yes' },
      headers: { cookie: '_session=gone' },
    });
    expect(gone.status).toBe(403);
    expect(noticeOf(gone)).toContain('This form could not be accepted');
    // A browser that has the page open, with another value than the page's.
    const browser = new FormBrowser(base);
    const form = formTo(await browser.open('/oauth2/device'), '/oauth2/device');
    const forged = await browser.submit(form, { xsrf: 'forged', user_code: device.user_code, confirm: 'yes' });
    expect(forged.status).toBe(403);
    expect(noticeOf(forged)).toContain('This form could not be accepted');
    expect((await poll(p, client, device.device_code)).body.error).toBe('authorization_pending');
  });
});

describe('with OIDC_DEVICE_CODE_EXPIRE_SECONDS=60 and rate limits on', () => {
  let short: Running;
  beforeAll(async () => {
    short = await startProvider({ OIDC_DEVICE_CODE_EXPIRE_SECONDS: '60', RATE_LIMIT_ENABLED: 'true', TRUST_PROXY: 'true' });
  });
  afterAll(() => short?.close());

  it('gives codes for 60 seconds, after which the poll is expired_token and the page says so', async () => {
    const client = await deviceClient(short);
    const device = await oidc.initiateDeviceAuthorization(await configFor(short, client), { scope: 'openid' });
    expect(device.expires_in).toBe(60);
    expect((await poll(short, client, device.device_code)).body.error).toBe('authorization_pending');
    // A minute passes: the record's expiry (the provider's, in its payload) moves to the past.
    await short.t.db
      .withTables<DeviceRecords>()
      .updateTable('oidc_records')
      .set({
        payload: sql`jsonb_set(payload, '{exp}', to_jsonb(extract(epoch from now())::int - 1))`,
        polled_at: sql<Date>`now() - interval '1 minute'`,
      })
      .where('model', '=', 'DeviceCode')
      .where('id', '=', device.device_code)
      .execute();
    const res = await poll(short, client, device.device_code);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('expired_token');
    const browser = new FormBrowser(short.base);
    const page = await browser.submit(formTo(await browser.open('/oauth2/device'), '/oauth2/device'), { user_code: device.user_code });
    expect(page.status).toBe(400);
    expect(noticeOf(page)).toBe('That code has expired. Start again on your device to get a new one.');
  });

  it('counts the page against AUTH_RATE_LIMIT_PER_MINUTE per address, and refuses on a page past it', async () => {
    const ip = '10.77.0.1';
    const open = () => fetch(`${short.base}/oauth2/device`, { headers: { 'X-Forwarded-For': ip } });
    const first = await open();
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit-limit')).toBe('20');
    const answers = await Promise.all(Array.from({ length: 20 }, open));
    const refused = answers.filter((res) => res.status === 429);
    expect(refused).toHaveLength(1);
    expect(Number(refused[0].headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await refused[0].text()).toContain('temporarily_unavailable');
    // Another address is not held back.
    expect((await fetch(`${short.base}/oauth2/device`, { headers: { 'X-Forwarded-For': '10.77.0.2' } })).status).toBe(200);
  });
});
