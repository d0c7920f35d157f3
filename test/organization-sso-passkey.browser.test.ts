import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { startTestApp, type TestContext } from './support/app.js';
import { describeInBrowser, launchChromium } from './support/browser.js';
import { startDnsServer, type DnsServer } from './support/dns-server.js';
import { expectError } from './support/expect.js';
import { freePort } from './support/net.js';
import { openPasskeyPage, servePasskeyPage, type PageAnswer } from './support/passkey-page.js';

// `sso_required` against a passkey: a person at an organisation's verified domain who made a passkey
// before the organisation required its identity provider is sent to that provider when they sign in
// with it, in headless Chromium with a virtual authenticator, and no session is opened.

const TIMEOUT = 60_000;

describeInBrowser('sso_required and passkeys', () => {
  let t: TestContext;
  let dns: DnsServer;
  let server: Server;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    dns = await startDnsServer();
    const port = await freePort();
    // The relying party is localhost (from APP_URL), the one host a browser allows passkeys on without TLS.
    t = await startTestApp({ APP_URL: `http://localhost:${port}`, DNS_SERVERS: dns.address, PROVIDER_ALLOW_PRIVATE_URLS: 'true' });
    server = await servePasskeyPage(t.app.koa.callback(), port);
    browser = await launchChromium(TIMEOUT, ['--host-resolver-rules=MAP localhost 127.0.0.1']);
    ({ page } = await openPasskeyPage(browser, `http://localhost:${port}`));
  }, TIMEOUT);

  afterAll(async () => {
    await browser?.close();
    if (server?.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    await t?.close();
    await dns?.close();
  });

  const inPage = <T = PageAnswer>(script: string): Promise<T> => page.evaluate<T>(script);

  /** The passwordless passkey sign-in: the assertion made in the browser, sent to the API. */
  const signInWithPasskey = async () =>
    t.post('/api/auth/passkeys/login', await inPage<{ challenge_id: string; credential: unknown }>('passkeyAssertion()'));

  const sessionsOf = (userId: number) => t.db.selectFrom('sessions').select('id').where('user_id', '=', userId).orderBy('id').execute();

  it(
    'refuses a passkey made before the policy, naming the provider, and opens no session',
    async () => {
      const domain = `acme-${randomBytes(4).toString('hex')}.test`;
      const person = await t.register({ email: `ada@${domain}` });
      await t.db.updateTable('users').set({ email_verified: true }).where('id', '=', person.id).execute();

      // No organisation has the domain yet: the passkey is made and signs in.
      expect((await inPage(`registerPasskey(${JSON.stringify(person.access)}, 'Laptop')`)).status).toBe(201);
      const before = await signInWithPasskey();
      expect(before.status).toBe(200);
      expect(before.body.data.user.id).toBe(person.id);

      // An organisation verifies the domain and names its provider, without requiring it yet.
      const owner = await t.register();
      await t.db.updateTable('users').set({ email_verified: true }).where('id', '=', owner.id).execute();
      const admin = await t.adminToken();
      const slug = `acme-okta-${randomBytes(3).toString('hex')}`;
      const provider = await t.post(
        '/api/identity-providers',
        { slug, kind: 'oidc', name: 'Acme Okta', client_id: 'client', client_secret: 'secret', issuer: 'http://127.0.0.1:1/issuer' },
        { token: admin },
      );
      expect(provider.status).toBe(201);
      const created = await t.post('/api/organizations', { name: 'Acme' }, { token: owner.access });
      expect(created.status).toBe(201);
      const org: number = created.body.data.id;
      const added = await t.post(`/api/organizations/${org}/domains`, { domain }, { token: owner.access });
      expect(added.status).toBe(201);
      dns.records.set(`_account-verification.${domain}`, [added.body.data.verification.value]);
      expect((await t.post(`/api/organizations/${org}/domains/${domain}/verify`, undefined, { token: owner.access })).status).toBe(200);
      const named = await t.put(`/api/organizations/${org}/sign-in`, { identity_provider: slug }, { token: owner.access });
      expect(named.status).toBe(200);
      expect((await signInWithPasskey()).status).toBe(200);

      // The organisation requires its provider: the same passkey is refused, and the answer says where to go.
      const required = await t.put(`/api/organizations/${org}/sign-in`, { sso_required: true }, { token: owner.access });
      expect(required.body.data).toMatchObject({ identity_provider: slug, sso_required: true });
      const sessions = await sessionsOf(person.id);
      const refused = await signInWithPasskey();
      expectError(refused, 403, 'SSO_REQUIRED');
      expect(refused.body.error.provider).toBe(slug);
      expect(refused.body.data).toBeUndefined();
      expect(await sessionsOf(person.id)).toEqual(sessions);

      // Lifted again: the passkey signs in as before.
      expect((await t.put(`/api/organizations/${org}/sign-in`, { sso_required: false }, { token: owner.access })).status).toBe(200);
      const after = await signInWithPasskey();
      expect(after.status).toBe(200);
      expect(await sessionsOf(person.id)).toHaveLength(sessions.length + 1);
    },
    TIMEOUT,
  );
});
