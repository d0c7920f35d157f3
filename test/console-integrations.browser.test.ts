import type { BrowserContext, Page } from 'playwright-core';
import { ADMIN } from './support/app.js';
import { describeInBrowser } from './support/browser.js';
import {
  CONSOLE_TIMEOUT,
  foreignRequests,
  seriousViolations,
  signInToConsole,
  startConsoleRig,
  type ConsoleRig,
} from './support/console.js';
import { until } from './support/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.js';

// The admin screens of what the service connects to, used as a person would: an OAuth client
// registered and its secret read once, a provider added from a preset, a webhook whose failed
// delivery is replayed once its receiver is fixed. Each step is checked through the API, and each
// action's audit event read there.

interface AuditEvent {
  id: number;
  event_type: string;
  actor_user_id: number | null;
  subject_user_id: number | null;
  details: Record<string, unknown>;
}

describeInBrowser('the console’s OAuth clients, identity providers and webhooks', () => {
  let rig: ConsoleRig;
  let receiver: WebhookReceiver;
  let context: BrowserContext;
  let page: Page;
  let admin: string;
  let adminId: number;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    [rig, receiver] = await Promise.all([
      // Webhooks to the test's own receiver on 127.0.0.1, looked at every 50 ms, given up after one attempt.
      startConsoleRig({ WEBHOOK_ALLOW_PRIVATE_URLS: 'true', WEBHOOK_POLL_INTERVAL_MS: '50', WEBHOOK_MAX_ATTEMPTS: '1' }),
      startWebhookReceiver(),
    ]);
    admin = await rig.t.adminToken();
    adminId = (await rig.t.get('/api/auth/me', { token: admin })).body.data.id as number;
    context = await rig.newContext();
    page = await context.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
  }, CONSOLE_TIMEOUT);

  afterAll(async () => {
    await rig?.close();
    await receiver?.close();
  }, CONSOLE_TIMEOUT);

  /** The admin's one audit event of this type whose details match, read through the API. */
  async function auditEvent(type: string, details: Record<string, unknown>): Promise<AuditEvent> {
    const res = await rig.t.get(`/api/audit-events?event_type=${type}&limit=100`, { token: admin });
    expect(res.status).toBe(200);
    const events = (res.body.data as AuditEvent[]).filter((event) =>
      Object.entries(details).every(([key, value]) => JSON.stringify(event.details[key]) === JSON.stringify(value)),
    );
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ event_type: type, actor_user_id: adminId, subject_user_id: null });
    return events[0];
  }

  /** A client_credentials request at the token endpoint with this client's ID and secret: its status. */
  async function clientCredentials(clientId: string, secret: string): Promise<{ status: number; body: any }> {
    const res = await fetch(`${rig.t.baseUrl}/oauth2/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    });
    return { status: res.status, body: await res.json() };
  }

  /** Goes to a screen through the console's navigation, as a person would (no reload). */
  async function openScreen(name: string, title: string): Promise<void> {
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name }).click();
    await page.getByRole('heading', { level: 1, name: title }).waitFor();
  }

  const heading = (name: string) => page.getByRole('heading', { level: 1, name });

  it('registers an OAuth client and shows its secret once; the secret works, rotating replaces it, a change and a deletion follow', async () => {
    await signInToConsole(page, '/clients', ADMIN.email, ADMIN.password);
    await page.getByText('No application signs in through the service yet').waitFor();
    await expect(seriousViolations(page)).resolves.toEqual([]);

    const form = page.getByRole('form', { name: 'Register a client' });
    await form.getByRole('textbox', { name: /^Name/ }).fill('Nightly reports');
    await expect(form.getByRole('radio', { name: /^Confidential/ }).isChecked()).resolves.toBe(true);
    // A redirect URI the service refuses: the form shows its message, naming the field, and nothing is made.
    await form.getByRole('textbox', { name: /^Redirect URIs/ }).fill('http://reports.example.com/callback');
    await form.getByRole('button', { name: 'Register client' }).click();
    const refusal = form.getByRole('alert');
    await refusal.waitFor();
    await expect(refusal.textContent()).resolves.toMatch(/^Request validation failed: redirect_uris\.0 /);
    expect((await rig.t.get('/api/oauth/clients', { token: admin })).body.data).toEqual([]);
    await form
      .getByRole('textbox', { name: /^Redirect URIs/ })
      .fill('https://reports.example.com/callback\nhttps://reports.example.com/oidc/callback');
    await form.getByRole('textbox', { name: /^Post-logout redirect URIs/ }).fill('https://reports.example.com/');
    await form.getByRole('checkbox', { name: /^Client credentials/ }).check();
    await form.getByRole('checkbox', { name: /^offline_access/ }).uncheck();
    await form.getByRole('checkbox', { name: /^First party/ }).check();
    await form.getByRole('button', { name: 'Register client' }).click();

    // The client's own page, with the secret shown this once.
    await heading('Nightly reports').waitFor();
    const clientId = new URL(page.url()).searchParams.get('client')!;
    expect(new URL(page.url()).pathname).toBe('/console/clients');
    const secretBox = page.getByRole('textbox', { name: /^Client secret/ });
    const secret = await secretBox.inputValue();
    expect(secret.length).toBeGreaterThanOrEqual(32);
    await expect(page.getByText('you will not see it again').count()).resolves.toBe(1);
    await expect(seriousViolations(page)).resolves.toEqual([]);

    const stored = await rig.t.get(`/api/oauth/clients/${clientId}`, { token: admin });
    expect(stored.status).toBe(200);
    expect(stored.body.data).toMatchObject({
      client_id: clientId,
      name: 'Nightly reports',
      type: 'confidential',
      has_client_secret: true,
      redirect_uris: ['https://reports.example.com/callback', 'https://reports.example.com/oidc/callback'],
      post_logout_redirect_uris: ['https://reports.example.com/'],
      scopes: ['openid', 'profile', 'email'],
      first_party: true,
      registered: false,
    });
    expect([...stored.body.data.grant_types].sort()).toEqual(['authorization_code', 'client_credentials', 'refresh_token']);
    expect(JSON.stringify(stored.body)).not.toContain(secret);
    expect((await auditEvent('oauth_client.created', { client_id: clientId })).details.type).toBe('confidential');

    // The secret is the client's: the token endpoint answers it, and refuses another.
    const granted = await clientCredentials(clientId, secret);
    expect(granted.status).toBe(200);
    expect(granted.body).toMatchObject({ access_token: expect.any(String), token_type: 'Bearer' });
    expect((await clientCredentials(clientId, `${secret}x`)).status).toBe(401);

    // Reloading the client's page signs in again silently and shows the client, never its secret.
    await page.reload();
    await heading('Nightly reports').waitFor();
    await page.getByText(clientId, { exact: true }).first().waitFor();
    await expect(secretBox.count()).resolves.toBe(0);
    await expect(page.content()).resolves.not.toContain(secret);

    // A change sends what changed, and is recorded with those fields.
    const settings = page.getByRole('form', { name: 'Settings of Nightly reports' });
    await settings.getByRole('textbox', { name: /^Name/ }).fill('Nightly exports');
    await settings.getByRole('button', { name: 'Save changes' }).click();
    await heading('Nightly exports').waitFor();
    expect((await rig.t.get(`/api/oauth/clients/${clientId}`, { token: admin })).body.data.name).toBe('Nightly exports');
    expect((await auditEvent('oauth_client.updated', { client_id: clientId })).details.fields).toEqual(['name']);

    // Rotating asks first, then shows the new secret once; the old one stops working at once.
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const rotateDialog = page.getByRole('dialog', { name: 'Give Nightly exports a new secret?' });
    await expect(rotateDialog.textContent()).resolves.toContain('stops working at once');
    await rotateDialog.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('heading', { level: 2, name: 'The new client secret' }).waitFor();
    const rotated = await secretBox.inputValue();
    expect(rotated).not.toBe(secret);
    expect((await clientCredentials(clientId, secret)).status).toBe(401);
    expect((await clientCredentials(clientId, rotated)).status).toBe(200);
    await auditEvent('oauth_client.secret_rotated', { client_id: clientId });
    await page.getByRole('button', { name: 'I have copied it' }).click();
    await expect(secretBox.count()).resolves.toBe(0);

    // Deleting says what becomes of its tokens, and ends them.
    await page.getByRole('button', { name: 'Delete client' }).click();
    const deleteDialog = page.getByRole('dialog', { name: 'Delete Nightly exports?' });
    await expect(deleteDialog.textContent()).resolves.toContain('access and refresh tokens stop working at once');
    await expect(seriousViolations(page)).resolves.toEqual([]);
    await deleteDialog.getByRole('button', { name: 'Delete client' }).click();
    await heading('OAuth clients').waitFor();
    await page.getByText('Nightly exports was deleted').waitFor();
    expect((await rig.t.get(`/api/oauth/clients/${clientId}`, { token: admin })).status).toBe(404);
    expect((await clientCredentials(clientId, rotated)).status).toBe(401);
    await auditEvent('oauth_client.deleted', { client_id: clientId });
  });

  it('adds an identity provider from a preset, asking only what the preset needs, then disables and deletes it', async () => {
    await openScreen('Identity providers', 'Identity providers');
    await page.getByText('Nobody can sign in with another account yet').waitFor();
    await expect(seriousViolations(page)).resolves.toEqual([]);

    await page.getByRole('radio', { name: 'GitHub' }).check();
    const form = page.getByRole('form', { name: 'Add GitHub' });
    // GitHub's endpoints come from the preset: the form has no field for them.
    await expect(form.getByRole('textbox', { name: /URL/ }).count()).resolves.toBe(0);
    await expect(form.textContent()).resolves.toContain(`${rig.origin}/api/auth/providers/github/callback`);
    await form.getByRole('textbox', { name: /^Client ID/ }).fill('Iv1.0123456789abcdef');
    await form.getByLabel('Client secret').fill('github-client-secret-value');
    await form.getByRole('checkbox', { name: /^Allow sign-up/ }).uncheck();
    await form.getByRole('button', { name: 'Add GitHub' }).click();

    await heading('GitHub').waitFor();
    expect(new URL(page.url()).searchParams.get('provider')).toBe('github');
    await expect(seriousViolations(page)).resolves.toEqual([]);
    const stored = await rig.t.get('/api/identity-providers/github', { token: admin });
    expect(stored.status).toBe(200);
    expect(stored.body.data).toMatchObject({
      slug: 'github',
      kind: 'oauth2',
      name: 'GitHub',
      client_id: 'Iv1.0123456789abcdef',
      has_client_secret: true,
      authorization_url: 'https://github.com/login/oauth/authorize',
      token_url: 'https://github.com/login/oauth/access_token',
      userinfo_url: 'https://api.github.com/user',
      emails_url: 'https://api.github.com/user/emails',
      scopes: ['read:user', 'user:email'],
      enabled: true,
      allow_signup: false,
      trust_email: false,
    });
    expect((await auditEvent('identity_provider.created', { provider: 'github' })).details.kind).toBe('oauth2');
    // The sign-in page offers it.
    expect((await rig.t.get('/api/auth/providers')).body.data).toEqual([{ slug: 'github', name: 'GitHub' }]);

    // Disabling says what it does; the sign-in page stops offering the provider.
    await page.getByRole('button', { name: 'Disable provider' }).click();
    const dialog = page.getByRole('dialog', { name: 'Disable GitHub?' });
    await expect(dialog.textContent()).resolves.toContain('sign-ins with it are refused');
    await dialog.getByRole('button', { name: 'Disable', exact: true }).click();
    await page.getByRole('button', { name: 'Enable provider' }).waitFor();
    expect((await rig.t.get('/api/identity-providers/github', { token: admin })).body.data.enabled).toBe(false);
    expect((await rig.t.get('/api/auth/providers')).body.data).toEqual([]);
    expect((await auditEvent('identity_provider.updated', { provider: 'github' })).details.fields).toEqual(['enabled']);

    // Back on the list, GitHub is listed as disabled and no longer offered as a preset to add.
    await page.getByRole('link', { name: 'All identity providers' }).click();
    await heading('Identity providers').waitFor();
    await page.getByRole('row', { name: /GitHub github OAuth 2.0 Disabled/ }).waitFor();
    await expect(page.getByRole('radio', { name: 'GitHub (added)' }).isDisabled()).resolves.toBe(true);

    // Deleting says what becomes of the identities linked through it.
    await page.getByRole('link', { name: 'GitHub', exact: true }).click();
    await heading('GitHub').waitFor();
    await page.getByRole('button', { name: 'Delete provider' }).click();
    const deleteDialog = page.getByRole('dialog', { name: 'Delete GitHub?' });
    await expect(deleteDialog.textContent()).resolves.toContain('the identities linked through it');
    await deleteDialog.getByRole('button', { name: 'Delete provider' }).click();
    await heading('Identity providers').waitFor();
    await page.getByText('GitHub was deleted').waitFor();
    expect((await rig.t.get('/api/identity-providers/github', { token: admin })).status).toBe(404);
    await auditEvent('identity_provider.deleted', { provider: 'github' });
    await expect(page.getByRole('radio', { name: 'GitHub' }).isDisabled()).resolves.toBe(false);
  });

  it('registers a webhook with its secret shown once, replays a failed delivery once the receiver is fixed, then rotates, changes and deletes it', async () => {
    receiver.answer = () => 500;
    await openScreen('Webhooks', 'Webhooks');
    await page.getByText('No endpoint receives events yet').waitFor();
    await expect(seriousViolations(page)).resolves.toEqual([]);

    const form = page.getByRole('form', { name: 'Register an endpoint' });
    await form.getByRole('textbox', { name: /^URL/ }).fill(receiver.url);
    await form.getByRole('textbox', { name: /^Description/ }).fill('CRM sync');
    await form.getByRole('checkbox', { name: /^Every event/ }).uncheck();
    await form.getByRole('checkbox', { name: 'user.created' }).check();
    await form.getByRole('button', { name: 'Register endpoint' }).click();

    const webhookId = Number(await until(() => new URL(page.url()).searchParams.get('webhook'), 'the endpoint’s page'));
    await heading(`Webhook ${webhookId}`).waitFor();
    const secret = await page.getByRole('textbox', { name: /^Signing secret/ }).inputValue();
    expect(secret).toMatch(/^whsec_/);
    receiver.trust(secret);
    // Leaving the endpoint's page forgets the secret: back on it, it is not shown again.
    await page.getByRole('link', { name: 'All webhooks' }).click();
    await page.getByRole('link', { name: receiver.url }).click();
    await heading(`Webhook ${webhookId}`).waitFor();
    await page.getByRole('heading', { level: 2, name: 'Details' }).waitFor();
    await expect(page.getByRole('textbox', { name: /^Signing secret/ }).count()).resolves.toBe(0);
    await page.getByText('Nothing was sent to this endpoint yet').waitFor();
    await expect(seriousViolations(page)).resolves.toEqual([]);

    const stored = await rig.t.get(`/api/webhooks/${webhookId}`, { token: admin });
    expect(stored.body.data).toMatchObject({ url: receiver.url, events: ['user.created'], description: 'CRM sync', enabled: true });
    expect(await auditEvent('webhook.created', { webhook_id: webhookId })).toMatchObject({
      details: { host: `127.0.0.1:${receiver.port}`, events: ['user.created'] },
    });

    // A person registers; the receiver answers 500, and the one attempt allowed fails.
    const user = await rig.t.register();
    const deliveries = async () =>
      (await rig.t.get(`/api/webhooks/${webhookId}/deliveries?limit=100`, { token: admin })).body.data as Array<{
        id: number;
        message_id: string;
        status: string;
        attempts: number;
        last_status_code: number | null;
      }>;
    const failed = await until(async () => (await deliveries()).find((d) => d.status === 'failed'), 'the failed delivery');
    expect(failed).toMatchObject({ attempts: 1, last_status_code: 500 });
    expect(receiver.received.map((r) => [r.status, r.payload.type, r.payload.data.id])).toEqual([[500, 'user.created', user.id]]);

    // The log shows it failed; the receiver is fixed and the delivery replayed from the console.
    await page.getByRole('button', { name: 'Refresh' }).click();
    const row = page.getByRole('row', { name: new RegExp(`^${failed.id} user\\.created Failed`) });
    await row.waitFor();
    await expect(seriousViolations(page)).resolves.toEqual([]);
    receiver.answer = () => 204;
    await page.getByRole('button', { name: `Replay delivery ${failed.id}` }).click();
    // Progress while the console waits for the attempt, then the delivery's new state.
    await page
      .getByRole('status')
      .filter({ hasText: `Replaying delivery ${failed.id}…` })
      .waitFor();
    await page.getByText(`Delivery ${failed.id} was delivered: the endpoint answered HTTP 204.`).waitFor();
    await page.getByRole('row', { name: new RegExp(`^${failed.id} user\\.created Delivered`) }).waitFor();

    const after = (await deliveries()).find((d) => d.id === failed.id);
    expect(after).toMatchObject({ status: 'delivered', attempts: 2, last_status_code: 204, message_id: failed.message_id });
    expect(receiver.received.map((r) => [r.id, r.status])).toEqual([
      [failed.message_id, 500],
      [failed.message_id, 204],
    ]);
    expect(receiver.received[1].verifiedBy).toEqual([secret]);
    expect(receiver.received[1].payload.data.id).toBe(user.id);
    await auditEvent('webhook.delivery_retried', { webhook_id: webhookId, delivery_id: failed.id });

    // A new signing secret, shown once: the next message is signed with it (and, for a day, the old one).
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const rotateDialog = page.getByRole('dialog', { name: 'Make a new signing secret?' });
    await expect(rotateDialog.textContent()).resolves.toContain('for the next 24 hours');
    await rotateDialog.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('heading', { level: 2, name: 'The new signing secret' }).waitFor();
    const rotated = await page.getByRole('textbox', { name: /^Signing secret/ }).inputValue();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
    receiver.trust(rotated);
    expect((await rig.t.get(`/api/webhooks/${webhookId}`, { token: admin })).body.data.previous_secret_expires_at).toEqual(
      expect.any(String),
    );
    await auditEvent('webhook.secret_rotated', { webhook_id: webhookId });
    const second = await rig.t.register();
    const signed = await until(() => receiver.received[2], 'the message after the rotation');
    expect(signed.payload.data.id).toBe(second.id);
    expect(signed.verifiedBy).toEqual([secret, rotated]);

    // A change sends only what changed: the description, and the endpoint disabled.
    const settings = page.getByRole('form', { name: `Settings of webhook ${webhookId}` });
    await settings.getByRole('textbox', { name: /^Description/ }).fill('CRM sync, paused');
    await settings.getByRole('checkbox', { name: /^Enabled/ }).uncheck();
    await settings.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Saved. Deliveries still pending go to the endpoint as it is now.').waitFor();
    expect((await rig.t.get(`/api/webhooks/${webhookId}`, { token: admin })).body.data).toMatchObject({
      description: 'CRM sync, paused',
      enabled: false,
      events: ['user.created'],
    });
    expect((await auditEvent('webhook.updated', { webhook_id: webhookId })).details).toMatchObject({
      fields: ['description', 'enabled'],
      enabled: false,
    });

    // Deleting says that its deliveries go with it.
    await page.getByRole('button', { name: 'Delete endpoint' }).click();
    const deleteDialog = page.getByRole('dialog', { name: `Delete webhook ${webhookId}?` });
    await expect(deleteDialog.textContent()).resolves.toContain('removed with its deliveries');
    await deleteDialog.getByRole('button', { name: 'Delete endpoint' }).click();
    await heading('Webhooks').waitFor();
    await page.getByText(`The endpoint ${receiver.url} was deleted`).waitFor();
    expect((await rig.t.get(`/api/webhooks/${webhookId}`, { token: admin })).status).toBe(404);
    await auditEvent('webhook.deleted', { webhook_id: webhookId });
  });

  it('made no request beyond the service’s origin, and the pages raised no error', () => {
    expect(foreignRequests(rig.requests, rig.origin)).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
