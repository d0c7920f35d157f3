import type { Page } from 'playwright-core';
import { ADMIN, uniqueEmail } from './support/app.js';
import { describeInBrowser } from './support/browser.js';
import {
  CONSOLE_TIMEOUT,
  foreignRequests,
  seriousViolations,
  signInToConsole,
  startConsoleRig,
  type ConsoleRig,
} from './support/console.js';
import { claimsOf } from './support/jwt.js';
import { until } from './support/wait.js';

// The console's screens about people, used as an admin would: the overview, finding a user, disabling
// and enabling them, ending one of their sessions, and reading what each of those wrote to the audit
// trail. Every step is checked through the API as well as on the page.

describeInBrowser('the console’s screens about people', () => {
  let rig: ConsoleRig;
  let admin: string;
  let adminId: number;

  beforeAll(async () => {
    rig = await startConsoleRig();
    admin = await rig.t.adminToken();
    adminId = Number(claimsOf(admin).sub);
  }, CONSOLE_TIMEOUT);

  afterAll(() => rig?.close(), CONSOLE_TIMEOUT);

  const heading = (page: Page) => page.getByRole('heading', { level: 1 });
  /** Opens a screen from the navigation, as a person does, and waits for its heading. */
  async function open(page: Page, link: string, title: string): Promise<void> {
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: link, exact: true }).click();
    await page.getByRole('heading', { level: 1, name: title }).waitFor();
  }
  /** Clicks a button that asks first, then the dialog's confirming button. */
  async function confirm(page: Page, button: ReturnType<Page['getByRole']>, dialog: string, confirmWith: string): Promise<void> {
    await button.click();
    const question = page.getByRole('dialog', { name: dialog });
    await question.getByRole('button', { name: confirmWith, exact: true }).click();
    await question.waitFor({ state: 'hidden' });
  }
  const userOf = async (id: number) => (await rig.t.get(`/api/users/${id}`, { token: admin })).body.data as { is_active: boolean };
  const eventsOf = async (id: number, type: string) =>
    (await rig.t.get(`/api/audit-events?user_id=${id}&event_type=${type}`, { token: admin })).body.data as Array<{
      id: number;
      actor_user_id: number | null;
      subject_user_id: number | null;
      details: Record<string, unknown>;
    }>;

  it(
    'finds a user, disables and enables them, revokes a session, and shows the audit events each step wrote',
    async () => {
      const email = uniqueEmail('grace');
      const person = await rig.t.register({ email, name: 'Grace Hopper', password: 'cobol-compiler-1959' });

      const context = await rig.newContext();
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));

      // The overview, with the figures of the API's overview.
      await signInToConsole(page, '/', ADMIN.email, ADMIN.password);
      await expect(heading(page).textContent()).resolves.toBe('Overview');
      const overview = (await rig.t.get('/api/admin/overview', { token: admin })).body.data;
      const users = page.getByRole('region', { name: 'Users' });
      await users.getByText('Disabled', { exact: true }).waitFor();
      await expect(users.locator('.stat-value').first().textContent()).resolves.toBe(String(overview.users.total));
      await expect(seriousViolations(page)).resolves.toEqual([]);

      // Users: found by e-mail.
      await open(page, 'Users', 'Users');
      await page.getByRole('search', { name: 'Find users' }).getByLabel('Search').fill(email);
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await page.waitForURL((url) => url.searchParams.get('q') === email);
      const row = page.getByRole('link', { name: email, exact: true });
      await row.waitFor();
      // The search's answer replaces the whole list: wait until the rows before it are gone.
      await page.locator('.users-table tbody tr').nth(1).waitFor({ state: 'detached' });
      await expect(page.locator('.users-table tbody tr').count()).resolves.toBe(1);
      await expect(seriousViolations(page)).resolves.toEqual([]);

      // Their screen.
      await row.click();
      await page.getByRole('heading', { level: 1, name: 'Grace Hopper' }).waitFor();
      expect(new URL(page.url()).pathname).toBe(`/console/users/${person.id}`);
      await page.getByRole('table', { name: 'Live sessions, newest first' }).waitFor();
      await expect(seriousViolations(page)).resolves.toEqual([]);

      // Disabled: the API says so, and their sessions end.
      await confirm(page, page.getByRole('button', { name: 'Disable user' }), `Disable ${email}?`, 'Disable user');
      await page.getByText(`${email} is disabled and signed out everywhere.`).waitFor();
      expect((await userOf(person.id)).is_active).toBe(false);
      expect((await rig.t.post('/api/auth/refresh', { refresh_token: person.refresh })).status).toBe(401);
      await page.getByText(`No live sessions: ${email} is signed out everywhere.`).waitFor();

      // Enabled again.
      await confirm(page, page.getByRole('button', { name: 'Enable user' }), `Enable ${email}?`, 'Enable user');
      await page.getByText(`${email} is enabled: they may sign in again.`).waitFor();
      expect((await userOf(person.id)).is_active).toBe(true);

      // They sign in again (two devices); the admin ends one of the sessions.
      const signIn = async () => {
        const res = await rig.t.post('/api/auth/login/json', { email, password: 'cobol-compiler-1959' });
        expect(res.status).toBe(200);
        return { refresh: res.body.data.refresh_token as string, sid: claimsOf(res.body.data.access_token).sid };
      };
      const laptop = await signIn();
      const phone = await signIn();
      await page.getByRole('button', { name: 'Refresh the sessions' }).click();
      const session = page.locator(`tr[data-session="${phone.sid}"]`);
      await session.waitFor();
      await page.locator(`tr[data-session="${laptop.sid}"]`).waitFor();
      await confirm(page, session.getByRole('button', { name: /^Revoke the session started / }), 'Revoke this session?', 'Revoke');
      await page.getByText('The session is revoked.').waitFor();
      await session.waitFor({ state: 'detached' });
      // Through the API: that session's refresh fails, it is gone from the admin's list, the other goes on.
      expect((await rig.t.post('/api/auth/refresh', { refresh_token: phone.refresh })).status).toBe(401);
      const listed = await rig.t.get(`/api/users/${person.id}/sessions`, { token: admin });
      expect(listed.body.data.map((item: { id: string }) => item.id)).toEqual([laptop.sid]);
      expect((await rig.t.post('/api/auth/refresh', { refresh_token: laptop.refresh })).status).toBe(200);

      // What each step wrote, through the API: two updates and the revocation, the admin as actor.
      const updates = await eventsOf(person.id, 'user.updated');
      expect(updates.map((event) => [event.actor_user_id, event.subject_user_id, event.details])).toEqual([
        [adminId, person.id, { fields: ['is_active'], is_active: false }],
        [adminId, person.id, { fields: ['is_active'], is_active: true }],
      ]);
      const revoked = await eventsOf(person.id, 'session.revoked');
      expect(revoked.map((event) => [event.actor_user_id, event.subject_user_id, event.details])).toEqual([
        [adminId, person.id, { session_id: phone.sid }],
      ]);

      // And on the user's screen: their events, those three among them.
      const events = page.getByRole('table', { name: `Events by or about ${email}, oldest first` });
      await until(
        async () => (await events.locator('tbody tr', { hasText: 'session.revoked' }).count()) === 1,
        'the revocation on the user screen',
      );
      await expect(events.locator('tbody tr', { hasText: 'user.updated' }).count()).resolves.toBe(2);
      await expect(seriousViolations(page)).resolves.toEqual([]);

      // The audit log, narrowed to the user and the revocation, with the event's details unfolded.
      await open(page, 'Audit log', 'Audit log');
      const filter = page.getByRole('search', { name: 'Filter the audit log' });
      await filter.getByLabel('User id').fill(String(person.id));
      await filter.getByLabel('Event type').selectOption('session.revoked');
      await filter.getByRole('button', { name: 'Show events' }).click();
      await page.waitForURL((url) => url.searchParams.get('event_type') === 'session.revoked');
      const log = page.getByRole('table', { name: 'Audit events' });
      const entry = log.locator('tbody tr', { hasText: 'session.revoked' });
      // The unfiltered list shows the revocation too: wait for the narrowed one to replace it.
      await until(async () => (await log.locator('tbody tr').count()) === 1 && (await entry.count()) === 1, 'the narrowed audit log');
      await expect(entry.getByRole('link', { name: `#${adminId}` }).count()).resolves.toBe(1);
      await expect(entry.getByRole('link', { name: `#${person.id}` }).count()).resolves.toBe(1);
      await entry.locator('summary').click();
      const details = JSON.parse(String(await entry.locator('pre').textContent())) as Record<string, unknown>;
      expect(details).toMatchObject({ session_id: phone.sid });
      expect(details.session_id).toBe(revoked[0].details.session_id);
      await expect(seriousViolations(page)).resolves.toEqual([]);

      // The disabling, narrowed the same way: both updates are listed.
      await filter.getByLabel('Event type').selectOption('user.updated');
      await filter.getByRole('button', { name: 'Show events' }).click();
      await page.waitForURL((url) => url.searchParams.get('event_type') === 'user.updated');
      await until(async () => (await log.locator('tbody tr', { hasText: 'user.updated' }).count()) === 2, 'both updates in the log');

      expect(foreignRequests(rig.requests, rig.origin)).toEqual([]);
      expect(errors).toEqual([]);
      await context.close();
    },
    CONSOLE_TIMEOUT,
  );

  it(
    'creates a user, makes them an admin, deletes and restores them',
    async () => {
      const context = await rig.newContext();
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await signInToConsole(page, '/users', ADMIN.email, ADMIN.password);
      await expect(heading(page).textContent()).resolves.toBe('Users');

      const email = uniqueEmail('katherine');
      const create = page.getByRole('form', { name: 'Create a user' });
      await create.getByLabel('Name').fill('Katherine Johnson');
      await create.getByLabel('E-mail address').fill(email);
      await create.getByLabel('Password').fill('trajectory-1962');
      await create.getByRole('button', { name: 'Create user' }).click();
      await page.getByRole('heading', { level: 1, name: 'Katherine Johnson' }).waitFor();
      const found = await rig.t.get(`/api/users?q=${encodeURIComponent(email)}`, { token: admin });
      expect(found.body.data).toEqual([expect.objectContaining({ email, name: 'Katherine Johnson', role: 'user', is_active: true })]);
      const id = found.body.data[0].id as number;
      expect(new URL(page.url()).pathname).toBe(`/console/users/${id}`);

      // An admin now.
      const role = page.getByRole('form', { name: 'Role' });
      await role.getByLabel('Role').selectOption('admin');
      await role.getByRole('button', { name: 'Change role' }).click();
      await page.getByText(`${email} is now an admin.`).waitFor();
      expect((await rig.t.get(`/api/users/${id}`, { token: admin })).body.data.role).toBe('admin');

      // Deleted: the screen still shows them (the API reads them among the deleted), with a way back.
      await confirm(page, page.getByRole('button', { name: 'Delete user' }), `Delete ${email}?`, 'Delete user');
      await page.getByText(`${email} is deleted.`).waitFor();
      await page.getByText('This account is deleted').waitFor();
      expect((await rig.t.get(`/api/users/${id}`, { token: admin })).status).toBe(404);
      const deleted = await rig.t.get(`/api/users?status=deleted&q=${encodeURIComponent(email)}`, { token: admin });
      expect(deleted.body.data.map((user: { id: number }) => user.id)).toEqual([id]);
      await expect(seriousViolations(page)).resolves.toEqual([]);

      await confirm(page, page.getByRole('button', { name: 'Restore user' }), `Restore ${email}?`, 'Restore user');
      await page.getByText(`${email} is restored.`).waitFor();
      expect((await rig.t.get(`/api/users/${id}`, { token: admin })).body.data).toMatchObject({ id, deleted_at: null, role: 'admin' });

      // Each step is in the trail, the admin as actor.
      const trail = (await rig.t.get(`/api/audit-events?user_id=${id}`, { token: admin })).body.data as Array<{
        event_type: string;
        actor_user_id: number | null;
      }>;
      expect(trail.map((event) => [event.event_type, event.actor_user_id])).toEqual([
        ['user.created', adminId],
        ['user.updated', adminId],
        ['user.deleted', adminId],
        ['user.restored', adminId],
      ]);
      const events = page.getByRole('table', { name: `Events by or about ${email}, oldest first` });
      await until(
        async () => (await events.locator('tbody tr', { hasText: 'user.restored' }).count()) === 1,
        'the restoring on the user screen',
      );

      expect(foreignRequests(rig.requests, rig.origin)).toEqual([]);
      expect(errors).toEqual([]);
      await context.close();
    },
    CONSOLE_TIMEOUT,
  );
});
