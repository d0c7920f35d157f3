import { createHash, randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import type { BrowserContext, Page } from 'playwright-core';
import type { RegisteredUser } from './support/app.js';
import { addVirtualAuthenticator, describeInBrowser } from './support/browser.js';
import {
  CONSOLE_TIMEOUT,
  foreignRequests,
  seriousViolations,
  signInToConsole,
  startConsoleRig,
  type ConsoleRig,
} from './support/console.js';
import { seedOauthClient } from './support/oauth-clients.js';
import { verifiedUser } from './support/organizations.js';

// A person's own account in the console, as they would use it: each step done on the page is then
// checked through the API. The steps share one browser and one person, in order: the sessions and
// the application's grant come before the first second factor, which signs every other session out.

const STEP = 60_000;

describeInBrowser('the account screen of the console', () => {
  let rig: ConsoleRig;
  let context: BrowserContext;
  let page: Page;
  let person: RegisteredUser;
  /** An access token of a session the person opened through the API, after their first second factor. */
  let apiToken: string;
  const errors: string[] = [];

  beforeAll(async () => {
    rig = await startConsoleRig();
    person = await verifiedUser(rig.t);
    context = await rig.newContext();
    page = await context.newPage();
    page.on('pageerror', (error) => errors.push(error.message));
  }, CONSOLE_TIMEOUT);

  afterAll(() => rig?.close(), CONSOLE_TIMEOUT);

  const dialog = (name: string) => page.getByRole('dialog', { name });
  const get = (path: string, token: string) => rig.t.get(path, { token });

  it(
    'signs in and shows every part of the account, accessibly',
    async () => {
      await signInToConsole(page, '/account', person.email, person.password);
      await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Account');
      for (const name of [
        'Profile',
        'Password',
        'Authenticator apps',
        'Passkeys',
        'Sessions',
        'Linked identities',
        'Connected applications',
        'API keys',
        'Organisations',
      ])
        await page.getByRole('heading', { level: 2, name, exact: true }).waitFor();
      await page.getByRole('table', { name: 'Signed-in sessions, newest first' }).waitFor();
      await page.getByText('No authenticator app yet').waitFor();
      await expect(seriousViolations(page)).resolves.toEqual([]);
    },
    STEP,
  );

  it(
    'revokes another session: its refresh token stops working',
    async () => {
      const elsewhere = await rig.t.post(
        '/api/auth/login/json',
        { email: person.email, password: person.password },
        { headers: { 'User-Agent': 'Backup script/2.0' } },
      );
      expect(elsewhere.status).toBe(200);
      await page.reload();
      await page.getByRole('table', { name: 'Signed-in sessions, newest first' }).waitFor();
      // This console's own session is marked, and has nothing to revoke.
      const current = page.getByRole('row').filter({ has: page.getByText('This session', { exact: true }) });
      await expect(current.count()).resolves.toBe(1);
      await expect(current.getByRole('button').count()).resolves.toBe(0);

      const revoke = page.getByRole('button', { name: /^Revoke the session of Backup script\/2\.0/ });
      await revoke.click();
      await dialog('Revoke this session?').getByRole('button', { name: 'Revoke' }).click();
      await revoke.waitFor({ state: 'detached' });

      const refreshed = await rig.t.post('/api/auth/refresh', { refresh_token: elsewhere.body.data.refresh_token });
      expect(refreshed.status).toBe(401);
      const sessions = await get('/api/auth/sessions', person.access);
      expect(sessions.status).toBe(200);
      expect(sessions.body.data.some((session: { user_agent: string | null }) => session.user_agent === 'Backup script/2.0')).toBe(false);
    },
    STEP,
  );

  it(
    'takes back what an application was allowed: it is no longer listed, and its refresh token is refused',
    async () => {
      // An application an admin registered; the person signs in to it and allows it, in another browser.
      const redirectUri = `${rig.origin}/health`;
      const app = await seedOauthClient(rig.t, { name: 'Team wiki', type: 'public', redirect_uris: [redirectUri] });
      const verifier = randomBytes(32).toString('base64url');
      const authorize = new URLSearchParams({
        client_id: app.id,
        redirect_uri: redirectUri,
        response_type: 'code',
        scope: 'openid email offline_access',
        prompt: 'consent',
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
      });
      const elsewhere = await rig.newContext();
      const tab = await elsewhere.newPage();
      await tab.goto(`/oauth2/authorize?${authorize.toString()}`);
      await tab.getByLabel('E-mail address').fill(person.email);
      await tab.getByLabel('Password').fill(person.password);
      await tab.getByRole('button', { name: 'Sign in', exact: true }).click();
      await Promise.all([tab.waitForURL((url) => url.pathname === '/health'), tab.getByRole('button', { name: 'Allow' }).click()]);
      const code = new URL(tab.url()).searchParams.get('code');
      await elsewhere.close();
      expect(code).toEqual(expect.any(String));
      const exchanged = await fetch(`${rig.t.baseUrl}/oauth2/token`, {
        method: 'POST',
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: code!,
          redirect_uri: redirectUri,
          client_id: app.id,
          code_verifier: verifier,
        }),
      });
      expect(exchanged.status).toBe(200);
      const { refresh_token: refreshToken } = (await exchanged.json()) as { refresh_token: string };
      const before = await get('/api/auth/oauth-grants', person.access);
      expect(before.body.data.map((grant: { client_name: string }) => grant.client_name)).toContain('Team wiki');

      await page.reload();
      const revoke = page.getByRole('button', { name: 'Revoke the access of Team wiki' });
      await revoke.click();
      await dialog('Revoke the access of Team wiki?').getByRole('button', { name: 'Revoke' }).click();
      await revoke.waitFor({ state: 'detached' });
      // The console's own grant stays, marked.
      await page
        .getByRole('row')
        .filter({ has: page.getByText('This console', { exact: true }) })
        .waitFor();

      const after = await get('/api/auth/oauth-grants', person.access);
      expect(after.status).toBe(200);
      expect(after.body.data.map((grant: { client_id: string }) => grant.client_id)).not.toContain(app.id);
      const refreshed = await fetch(`${rig.t.baseUrl}/oauth2/token`, {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: app.id }),
      });
      expect(refreshed.status).toBe(400);
      await expect(refreshed.json()).resolves.toMatchObject({ error: 'invalid_grant' });
    },
    STEP,
  );

  it(
    'enrols an authenticator app from the secret shown as text beside its QR code, and shows the recovery codes once',
    async () => {
      await page.getByRole('button', { name: 'Add an authenticator app' }).click();
      await page.getByLabel('Name of the app or device').fill('Phone');
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.getByRole('img', { name: 'QR code for your authenticator app' }).waitFor();
      // The QR code is drawn in the page (no image fetched): an SVG of modules.
      await expect(page.locator('svg.qr path').getAttribute('d')).resolves.toMatch(/^M\d+ \d+h1v1h-1z/);
      await expect(seriousViolations(page)).resolves.toEqual([]);
      const secret = await page.getByRole('textbox', { name: /^Secret key/ }).inputValue();
      expect(secret).toMatch(/^[A-Z2-7]{32}$/);
      const code = new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate();
      await page.getByLabel('Code from the app').fill(code);
      await page.getByRole('button', { name: 'Confirm', exact: true }).click();

      const codes = page.getByRole('list', { name: 'Recovery codes' }).getByRole('listitem');
      await codes.first().waitFor();
      const recovery = await codes.allTextContents();
      expect(recovery).toHaveLength(10);
      await page.getByRole('row').filter({ hasText: 'Phone' }).waitFor();

      // A password login now asks for a second factor; a recovery code read off the page answers it.
      const login = await rig.t.post('/api/auth/login/json', { email: person.email, password: person.password });
      expect(login.status).toBe(403);
      expect(login.body.error.code).toBe('MFA_REQUIRED');
      const verified = await rig.t.post('/api/auth/mfa/verify', {
        mfa_token: login.body.error.mfa_token,
        method: 'recovery_code',
        code: recovery[0],
      });
      expect(verified.status).toBe(200);
      apiToken = verified.body.data.access_token;
      const factors = await get('/api/auth/mfa/factors', apiToken);
      expect(factors.status).toBe(200);
      expect(factors.body.data).toEqual([expect.objectContaining({ type: 'totp', name: 'Phone' })]);
      expect(factors.body.meta.recovery_codes_remaining).toBe(9);
    },
    STEP,
  );

  it(
    'adds a passkey with the browser’s authenticator',
    async () => {
      const cdp = await context.newCDPSession(page);
      const authenticatorId = await addVirtualAuthenticator(cdp);
      await page.getByLabel('Name of the passkey').fill('Laptop');
      await page.getByRole('button', { name: 'Add a passkey' }).click();
      await page.getByText('The passkey “Laptop” is added').waitFor();
      await page.getByRole('table', { name: 'Passkeys' }).getByRole('row').filter({ hasText: 'Laptop' }).waitFor();

      const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
      expect(credentials).toHaveLength(1);
      const factors = await get('/api/auth/mfa/factors', apiToken);
      expect(factors.body.data).toEqual([
        expect.objectContaining({ type: 'totp', name: 'Phone' }),
        expect.objectContaining({ type: 'webauthn', name: 'Laptop' }),
      ]);
    },
    STEP,
  );

  it(
    'asks for the password when the sign-in is too old to add a way in, then makes the API key it shows once',
    async () => {
      // The console's sign-in was long ago, as far as the service knows.
      await rig.t.db
        .updateTable('sessions')
        .set({ authenticated_at: new Date(Date.now() - 60 * 60_000) })
        .where('user_id', '=', person.id)
        .execute();
      await page.getByRole('form', { name: 'Create an API key' }).getByRole('textbox', { name: /^Name/ }).fill('Nightly export');
      await page.getByRole('button', { name: 'Create key' }).click();
      const proof = dialog('Confirm it is you');
      await proof.waitFor();
      await proof.getByLabel('Password').fill('not-the-password');
      await proof.getByRole('button', { name: 'Confirm' }).click();
      await proof.getByRole('alert').waitFor();
      await expect(proof.getByRole('alert').textContent()).resolves.toBe('Current password is incorrect');
      await proof.getByLabel('Password').fill(person.password);
      await proof.getByRole('button', { name: 'Confirm' }).click();

      const key = await page.getByLabel('The key “Nightly export”').inputValue();
      expect(key).toMatch(/^ask_/);
      const keys = await get('/api/auth/api-keys', apiToken);
      expect(keys.body.data).toEqual([expect.objectContaining({ name: 'Nightly export', prefix: key.slice(0, 12) })]);
      // The key works.
      const me = await get('/api/auth/me', key);
      expect(me.status).toBe(200);
      expect(me.body.data.id).toBe(person.id);
    },
    STEP,
  );

  it(
    'accepts an invitation from the link of its mail, and shows a person invited at another address the API’s answer',
    async () => {
      const admin = await rig.t.adminToken();
      const org = await rig.t.post('/api/organizations', { name: 'Acme Corp' }, { token: admin });
      expect(org.status).toBe(201);
      const invitation = await rig.t.post(
        `/api/organizations/${org.body.data.id}/invitations`,
        { email: person.email, role: 'member' },
        { token: admin },
      );
      expect(invitation.status).toBe(201);
      const forSomeoneElse = await rig.t.post(
        `/api/organizations/${org.body.data.id}/invitations`,
        { email: 'someone-else@example.com', role: 'admin' },
        { token: admin },
      );
      expect(forSomeoneElse.status).toBe(201);

      // An invitation to another address: the page says it is not theirs, and accepting shows the API's word.
      await page.goto(`/console/invitations/${forSomeoneElse.body.data.id}`);
      await page.getByText('This invitation is not among those waiting for').waitFor();
      await page.getByRole('button', { name: 'Accept the invitation to the organisation' }).click();
      const refused = await rig.t.post(`/api/auth/invitations/${forSomeoneElse.body.data.id}/accept`, undefined, { token: apiToken });
      expect(refused.status).toBe(404);
      await expect(page.getByRole('alert').textContent()).resolves.toBe(refused.body.error.message);

      await page.goto(`/console/invitations/${invitation.body.data.id}`);
      await page.getByText('Acme Corp invites you to join as member').waitFor();
      await expect(seriousViolations(page)).resolves.toEqual([]);
      await page.getByRole('button', { name: 'Accept the invitation to Acme Corp' }).click();
      await page.getByRole('heading', { level: 1, name: 'You joined Acme Corp' }).waitFor();
      await expect(seriousViolations(page)).resolves.toEqual([]);

      const mine = await get('/api/auth/organizations', apiToken);
      expect(mine.status).toBe(200);
      expect(mine.body.data).toEqual([
        expect.objectContaining({ organization: expect.objectContaining({ id: org.body.data.id }), role: 'member' }),
      ]);
      // The account screen lists it.
      await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Account' }).click();
      await page.getByRole('button', { name: 'Leave Acme Corp' }).waitFor();

      // Acting for it: the console's tokens are refreshed for the organisation, which its grant keeps.
      await page.getByRole('button', { name: 'Act for Acme Corp' }).click();
      await page.locator('.badge.ok', { hasText: 'Active' }).waitFor();
      const grants = await rig.t.db
        .withTables<{
          oidc_records: { model: string; client_id: string | null; user_id: number | null; payload: { organizationId?: number } };
        }>()
        .selectFrom('oidc_records')
        .select('payload')
        .where('model', '=', 'Grant')
        .where('client_id', '=', 'console')
        .where('user_id', '=', person.id)
        .execute();
      expect(grants.map((grant) => grant.payload.organizationId)).toEqual([org.body.data.id]);
    },
    STEP,
  );

  it(
    'asks for a new e-mail address, which waits for its link, and changes the password, which signs every other session out',
    async () => {
      const newAddress = `new-${person.email}`;
      const emailForm = page.getByRole('form', { name: 'Change e-mail address' });
      await emailForm.getByLabel('New e-mail address').fill(newAddress);
      await emailForm.getByLabel('Current password').fill(person.password);
      await emailForm.getByRole('button', { name: 'Change address' }).click();
      await page.getByText(`A link is on its way to ${newAddress}`).waitFor();
      const me = await get('/api/auth/me', apiToken);
      expect(me.body.data).toMatchObject({ email: person.email, pending_email: newAddress });

      const passwordForm = page.getByRole('form', { name: 'Change password' });
      await passwordForm.getByLabel('Current password').fill(person.password);
      await passwordForm.getByLabel('New password').fill('another-long-passphrase-7');
      await passwordForm.getByRole('button', { name: 'Change password' }).click();
      await page.getByText('Your password is changed').waitFor();
      await page.getByRole('button', { name: 'Sign in again' }).waitFor();
      // The session opened through the API is signed out; the new password is the one that signs in.
      expect((await get('/api/auth/me', apiToken)).status).toBe(401);
      expect((await rig.t.post('/api/auth/login/json', { email: person.email, password: person.password })).status).toBe(401);
      const login = await rig.t.post('/api/auth/login/json', { email: person.email, password: 'another-long-passphrase-7' });
      expect(login.status).toBe(403);
      expect(login.body.error.code).toBe('MFA_REQUIRED');
    },
    STEP,
  );

  it('made no request outside the service, and the pages raised no error', () => {
    expect(foreignRequests(rig.requests, rig.origin)).toEqual([]);
    expect(errors).toEqual([]);
  });
});
