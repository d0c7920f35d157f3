import type { Server } from 'node:http';
import type { Browser, CDPSession, Page } from 'playwright-core';
import { startTestApp, type TestContext } from './support/app.js';
import { describeInBrowser, launchChromium } from './support/browser.js';
import { claimsOf } from './support/jwt.js';
import { freePort } from './support/net.js';
import { openPasskeyPage, servePasskeyPage, type PageAnswer } from './support/passkey-page.js';

// Passkeys end to end: headless Chromium with a virtual authenticator (the DevTools protocol's
// WebAuthn domain) registers a passkey through the API from a page on http://localhost:<port>,
// signs in with it alone, uses it after a password, and has a removed passkey refused.

const TIMEOUT = 60_000;

/** Failed logins that lock a client out of an account. */
const MAX_FAILURES = 3;

describeInBrowser('passkeys in a browser', () => {
  let clock = Date.now();
  let t: TestContext;
  let server: Server;
  let otherServer: Server;
  let origin: string;
  /** The same pages and API on another port: on the relying party, but not one of its origins. */
  let otherOrigin: string;
  let browser: Browser;
  let page: Page;
  let cdp: CDPSession;
  let authenticatorId: string;

  beforeAll(async () => {
    const [port, otherPort] = [await freePort(), await freePort()];
    origin = `http://localhost:${port}`;
    otherOrigin = `http://localhost:${otherPort}`;
    // The relying party is localhost (from APP_URL), the one host a browser allows passkeys on without TLS.
    // The login lockout is on (the per-IP budgets out of the way): a passkey sign-in completes a sign-in.
    const limits = { RATE_LIMIT_ENABLED: 'true', AUTH_RATE_LIMIT_PER_MINUTE: '100000', RATE_LIMIT_PER_MINUTE: '100000' };
    t = await startTestApp({ APP_URL: origin, ...limits, LOGIN_MAX_FAILURES: String(MAX_FAILURES) }, { clock: () => clock });
    const api = t.app.koa.callback();
    server = await servePasskeyPage(api, port);
    otherServer = await servePasskeyPage(api, otherPort);
    // localhost is this server's IPv4 address, whatever else the resolver would try first.
    browser = await launchChromium(TIMEOUT, ['--host-resolver-rules=MAP localhost 127.0.0.1']);
    ({ page, cdp, authenticatorId } = await openPasskeyPage(browser, origin));
  }, TIMEOUT);

  afterAll(async () => {
    await browser?.close();
    for (const listening of [server, otherServer]) {
      if (listening?.listening) await new Promise<void>((resolve) => listening.close(() => resolve()));
    }
    await t?.close();
  });

  // Each test starts with an empty authenticator, so that a discoverable sign-in offers its own passkey.
  beforeEach(() => cdp.send('WebAuthn.clearCredentials', { authenticatorId }));

  const inPage = <T = PageAnswer>(script: string): Promise<T> => page.evaluate<T>(script);

  it(
    'registers a passkey, signs in with it alone and after a password, and refuses it once removed',
    async () => {
      const user = await t.register();
      const elsewhere = await t.post('/api/auth/login/json', { email: user.email, password: user.password });

      // Registration: the first factor, so the other session ends and this one is raised.
      const registered = await inPage(`registerPasskey(${JSON.stringify(user.access)}, 'Laptop')`);
      expect(registered.status).toBe(201);
      expect(registered.body.data).toMatchObject({ type: 'webauthn', name: 'Laptop', last_used_at: null });
      const factorId: number = registered.body.data.id;
      const stored = await t.db.selectFrom('mfa_factors').selectAll().where('id', '=', factorId).executeTakeFirstOrThrow();
      expect(stored).toMatchObject({ user_id: user.id, type: 'webauthn', totp_secret_sealed: null });
      expect(stored.credential_id).toMatch(/^[\w-]+$/);
      expect((await t.get('/api/auth/me', { token: elsewhere.body.data.access_token })).status).toBe(401);
      const refreshed = await t.post('/api/auth/refresh', { refresh_token: user.refresh });
      expect(claimsOf(refreshed.body.data.access_token)).toMatchObject({ amr: ['pwd', 'hwk', 'mfa'], aal: 'aal2' });
      const listed = await t.get('/api/auth/mfa/factors', { token: refreshed.body.data.access_token });
      expect(listed.body.data).toEqual([registered.body.data]);

      // Without a password or an e-mail: a discoverable credential with user verification.
      const alone = await inPage('signInWithPasskey()');
      expect(alone.status).toBe(200);
      expect(alone.body.data.user.email).toBe(user.email);
      expect(claimsOf(alone.body.data.access_token)).toMatchObject({ sub: String(user.id), amr: ['hwk', 'mfa'], aal: 'aal2' });
      const afterUse = await t.db
        .selectFrom('mfa_factors')
        .select(['sign_count', 'last_used_at'])
        .where('id', '=', factorId)
        .executeTakeFirstOrThrow();
      expect(Number(afterUse.sign_count)).toBeGreaterThan(Number(stored.sign_count));
      expect(afterUse.last_used_at).not.toBeNull();

      // After a password: the second step of the login.
      const login = await t.post('/api/auth/login/json', { email: user.email, password: user.password });
      expect(login.status).toBe(403);
      expect(login.body.error.methods).toEqual(['webauthn']);
      const second = await inPage(`secondFactorWithPasskey(${JSON.stringify(login.body.error.mfa_token)})`);
      expect(second.status).toBe(200);
      expect(claimsOf(second.body.data.access_token)).toMatchObject({ amr: ['pwd', 'hwk', 'mfa'], aal: 'aal2' });

      // Removed: the authenticator still holds the credential, the service no longer takes it.
      expect((await t.delete(`/api/auth/mfa/factors/${factorId}`, { token: alone.body.data.access_token })).status).toBe(204);
      const refused = await inPage('signInWithPasskey()');
      expect(refused.status).toBe(401);
      expect(refused.body.error.code).toBe('INVALID_CREDENTIALS');
      // Nothing names the account of a passkey the service no longer has.
      const failed = await t.db
        .withTables<{
          audit_events: { id: number; event_type: string; subject_user_id: number | null; details: Record<string, unknown> };
        }>()
        .selectFrom('audit_events')
        .select(['subject_user_id', 'details'])
        .where('event_type', '=', 'login.failed')
        .orderBy('id', 'desc')
        .executeTakeFirst();
      expect(failed).toEqual({ subject_user_id: null, details: { reason: 'passkey_rejected', method: 'passkey' } });
      // Without a factor, a password signs in on its own again.
      expect((await t.post('/api/auth/login/json', { email: user.email, password: user.password })).status).toBe(200);
    },
    TIMEOUT,
  );

  it(
    "starts the client's count of failed logins again once a passkey signs in",
    async () => {
      const user = await t.register();
      expect((await inPage(`registerPasskey(${JSON.stringify(user.access)}, 'Laptop')`)).status).toBe(201);
      const wrong = () => t.post('/api/auth/login/json', { email: user.email, password: 'wrong-password-1' });
      for (let i = 0; i < MAX_FAILURES - 1; i++) expect((await wrong()).status).toBe(401);
      expect((await inPage('signInWithPasskey()')).status).toBe(200);
      // As many failures again, none of them the last.
      for (let i = 0; i < MAX_FAILURES - 1; i++) expect((await wrong()).status).toBe(401);
      const password = await t.post('/api/auth/login/json', { email: user.email, password: user.password });
      expect(password.status).toBe(403);
      expect(password.body.error.code).toBe('MFA_REQUIRED');
    },
    TIMEOUT,
  );

  it(
    'takes each challenge once and not after it expires',
    async () => {
      const user = await t.register();
      const answer = await inPage<unknown>(`registrationAnswer(${JSON.stringify(user.access)})`);
      expect((await t.post('/api/auth/passkeys/registration', { credential: answer }, { token: user.access })).body.data).toMatchObject({
        name: 'Passkey',
      });
      // Answered twice: the challenge is spent.
      const again = await t.post('/api/auth/passkeys/registration', { credential: answer }, { token: user.access });
      expect(again.status).toBe(400);
      expect(again.body.error).toEqual({ code: 'INVALID_PASSKEY', message: 'Unknown, used or expired challenge' });

      const assertion = await inPage<{ challenge_id: string; credential: unknown }>('passkeyAssertion()');
      expect((await t.post('/api/auth/passkeys/login', assertion)).status).toBe(200);
      // Replayed: the challenge is spent.
      expect((await t.post('/api/auth/passkeys/login', assertion)).body.error.code).toBe('UNAUTHORIZED');
      // Replayed against a fresh challenge: the signature is over the old one.
      const fresh = await t.post('/api/auth/passkeys/login/options', {});
      const replay = await t.post('/api/auth/passkeys/login', {
        challenge_id: fresh.body.data.challenge_id,
        credential: assertion.credential,
      });
      expect(replay.status).toBe(401);
      expect(replay.body.error.code).toBe('INVALID_CREDENTIALS');

      // Answered after five minutes: expired.
      const late = await inPage<{ challenge_id: string; credential: unknown }>('passkeyAssertion()');
      clock += 5 * 60 * 1000 + 1000;
      try {
        expect((await t.post('/api/auth/passkeys/login', late)).body.error.code).toBe('UNAUTHORIZED');
      } finally {
        clock = Date.now();
      }

      // New options leave out the passkey the user has, and name this relying party.
      const options = await t.post('/api/auth/passkeys/registration/options', undefined, { token: user.access });
      expect(options.body.data.excludeCredentials).toHaveLength(1);
      expect(options.body.data.rp).toEqual({ name: 'Account Service', id: 'localhost' });
    },
    TIMEOUT,
  );

  it(
    'checks the origin of every answer',
    async () => {
      const user = await t.register();
      const token = JSON.stringify(user.access);
      // Another port of localhost: the browser lets it use the relying party localhost, the service does not list it.
      const other = await openPasskeyPage(browser, otherOrigin);
      try {
        const foreign = await other.page.evaluate<PageAnswer>(`registerPasskey(${token}, 'Other')`);
        expect(foreign.status).toBe(400);
        expect(foreign.body.error.code).toBe('INVALID_PASSKEY');
        expect(await t.db.selectFrom('mfa_factors').select('id').where('user_id', '=', user.id).execute()).toEqual([]);

        // A passkey registered from the service's origin, held by an authenticator used on the other one.
        expect((await inPage(`registerPasskey(${token}, 'Laptop')`)).status).toBe(201);
        const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
        await other.cdp.send('WebAuthn.addCredential', { authenticatorId: other.authenticatorId, credential: credentials[0] });
        const elsewhere = await other.page.evaluate<PageAnswer>('signInWithPasskey()');
        expect(elsewhere.status).toBe(401);
        expect(elsewhere.body.error.code).toBe('INVALID_CREDENTIALS');
        expect((await inPage('signInWithPasskey()')).status).toBe(200);
      } finally {
        await other.page.close();
      }
    },
    TIMEOUT,
  );
});
