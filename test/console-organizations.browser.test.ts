import { randomBytes } from 'node:crypto';
import type { Locator, Page } from 'playwright-core';
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
import { startDnsServer, type DnsServer } from './support/dns-server.js';
import { addMember, verifiedUser } from './support/organizations.js';
import { until } from './support/wait.js';

// The console's organisation screens, used as a deployment's admin would: an organisation created,
// a role of the deployment's own, an invitation, members' roles (the last owner kept), a domain proven
// through DNS, the sign-in policy, and the organisation deleted. Every step is checked through the API
// as well as on the page.

describeInBrowser('the console’s organisation screens', () => {
  let rig: ConsoleRig;
  let dns: DnsServer;
  let admin: string;

  beforeAll(async () => {
    dns = await startDnsServer();
    rig = await startConsoleRig({ DNS_SERVERS: dns.address, PROVIDER_ALLOW_PRIVATE_URLS: 'true' });
    admin = await rig.t.adminToken();
  }, CONSOLE_TIMEOUT);

  afterAll(async () => {
    await rig?.close();
    await dns?.close();
  }, CONSOLE_TIMEOUT);

  /** Opens a screen from the navigation, as a person does, and waits for its heading. */
  async function open(page: Page, link: string, title: string): Promise<void> {
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: link, exact: true }).click();
    await page.getByRole('heading', { level: 1, name: title }).waitFor();
  }
  /** Clicks a button that asks first, then the dialog's confirming button; the dialog stays open when the action fails. */
  async function confirm(page: Page, button: Locator, dialog: string, confirmWith: string): Promise<Locator> {
    await button.click();
    const question = page.getByRole('dialog', { name: dialog });
    await question.getByRole('button', { name: confirmWith, exact: true }).click();
    return question;
  }
  /** Finds an organisation on the list by its slug and opens its screen. */
  async function openOrganization(page: Page, slug: string, name: string): Promise<void> {
    await open(page, 'Organisations', 'Organisations');
    await page.getByRole('search', { name: 'Find organisations' }).getByRole('searchbox').fill(slug);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByRole('link', { name, exact: true }).click();
    await page.getByRole('heading', { level: 1, name }).waitFor();
  }
  const api = {
    get: async (path: string) => {
      const res = await rig.t.get(path, { token: admin });
      expect(res.status).toBe(200);
      return res.body.data;
    },
  };

  it(
    'creates an organisation and a role, invites, changes roles, verifies a domain, sets the sign-in policy and deletes it',
    async () => {
      const tail = randomBytes(4).toString('hex');
      const slug = `acme-${tail}`;
      const roleKey = `billing-${tail}`;
      const domain = `acme-${tail}.test`;
      const member = await verifiedUser(rig.t, uniqueEmail('grace'));
      const provider = `okta-${tail}`;
      const created = await rig.t.post(
        '/api/identity-providers',
        {
          slug: provider,
          kind: 'oidc',
          name: 'Acme Okta',
          client_id: 'client',
          client_secret: 'secret',
          issuer: 'http://127.0.0.1:1/issuer',
        },
        { token: admin },
      );
      expect(created.status).toBe(201);

      const context = await rig.newContext();
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));

      // Organisations: a new one, made by its name and slug.
      await signInToConsole(page, '/organizations', ADMIN.email, ADMIN.password);
      await page.getByRole('form', { name: 'Create an organisation' }).waitFor();
      await expect(seriousViolations(page)).resolves.toEqual([]);
      const create = page.getByRole('form', { name: 'Create an organisation' });
      await create.getByRole('textbox', { name: 'Name', exact: true }).fill(`Acme ${tail}`);
      await create.getByRole('textbox', { name: /^Slug/ }).fill(slug);
      await create.getByRole('button', { name: 'Create organisation' }).click();
      await page.getByRole('heading', { level: 1, name: `Acme ${tail}` }).waitFor();
      const found = await api.get(`/api/organizations?q=${slug}`);
      expect(found).toEqual([expect.objectContaining({ slug, name: `Acme ${tail}` })]);
      const id: number = found[0].id;
      expect(new URL(page.url()).pathname).toBe(`/console/organizations/${id}`);
      const adminId: number = (await api.get('/api/auth/me')).id;
      expect(await api.get(`/api/organizations/${id}/members`)).toEqual([
        expect.objectContaining({ user: expect.objectContaining({ id: adminId }), role: 'owner' }),
      ]);
      await page.getByRole('table', { name: /^Members/ }).waitFor();
      await page.getByRole('form', { name: 'Sign-in policy' }).waitFor();
      await expect(seriousViolations(page)).resolves.toEqual([]);

      // The list finds it by its slug and links to it.
      await open(page, 'Organisations', 'Organisations');
      await page.getByRole('search', { name: 'Find organisations' }).getByLabel('Search').fill(slug);
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await page.waitForURL((url) => url.searchParams.get('q') === slug);
      const link = page.getByRole('link', { name: `Acme ${tail}`, exact: true });
      await link.waitFor();
      await expect(
        page
          .getByRole('table', { name: /^Organisations/ })
          .locator('tbody tr')
          .count(),
      ).resolves.toBe(1);
      await expect(seriousViolations(page)).resolves.toEqual([]);

      // Roles: one of the deployment's own; the built-in ones cannot be deleted.
      await open(page, 'Roles', 'Roles');
      await page.getByRole('table', { name: /^Roles/ }).waitFor();
      await expect(page.getByRole('button', { name: 'Delete owner' }).count()).resolves.toBe(0);
      const newRole = page.getByRole('form', { name: 'Create a role' });
      await newRole.getByRole('textbox', { name: /^Key/ }).fill(roleKey);
      await newRole.getByRole('textbox', { name: 'Name', exact: true }).fill('Billing');
      await newRole.getByRole('textbox', { name: /^Permissions/ }).fill('invoices:read, org:read\nmembers:read');
      await newRole.getByRole('button', { name: 'Create role' }).click();
      await page.getByRole('button', { name: `Delete ${roleKey}` }).waitFor();
      const roles: Array<{ key: string; name: string; permissions: string[]; built_in: boolean }> =
        await api.get('/api/organization-roles');
      expect(roles.find((role) => role.key === roleKey)).toEqual(
        expect.objectContaining({ name: 'Billing', permissions: ['invoices:read', 'org:read', 'members:read'], built_in: false }),
      );
      await expect(seriousViolations(page)).resolves.toEqual([]);
      // Changed: its name and permissions.
      await page.getByText(`Edit ${roleKey}`, { exact: true }).click();
      const edit = page.getByRole('form', { name: `Edit ${roleKey}` });
      await edit.getByRole('textbox', { name: 'Name', exact: true }).fill('Billing and invoices');
      await edit.getByRole('textbox', { name: /^Permissions/ }).fill('invoices:read\ninvoices:write\norg:read');
      await edit.getByRole('button', { name: 'Save role' }).click();
      await page.getByText(`${roleKey} is saved`).waitFor();
      expect(((await api.get('/api/organization-roles')) as typeof roles).find((role) => role.key === roleKey)).toEqual(
        expect.objectContaining({ name: 'Billing and invoices', permissions: ['invoices:read', 'invoices:write', 'org:read'] }),
      );

      // Back to the organisation, where a member has joined meanwhile.
      await addMember(rig.t, id, member.id, 'member');
      await openOrganization(page, slug, `Acme ${tail}`);

      // Invite by e-mail with the new role.
      const invitee = uniqueEmail('linus');
      const invite = page.getByRole('form', { name: 'Invite someone' });
      await invite.getByRole('textbox', { name: /^E-mail address/ }).fill(invitee);
      await invite.getByRole('combobox', { name: 'Role' }).selectOption(roleKey);
      await invite.getByRole('button', { name: 'Send invitation' }).click();
      await page.getByRole('button', { name: `Resend the invitation to ${invitee}` }).waitFor();
      const invitations: Array<{ id: string; email: string; role: string; expires_at: string }> = await api.get(
        `/api/organizations/${id}/invitations`,
      );
      expect(invitations).toEqual([expect.objectContaining({ email: invitee, role: roleKey })]);
      // Sent again: its expiry renewed from now.
      await page.getByRole('button', { name: `Resend the invitation to ${invitee}` }).click();
      await page.getByText(`The invitation is sent again to ${invitee}`).waitFor();
      const [resent] = await api.get(`/api/organizations/${id}/invitations`);
      expect(Date.parse(resent.expires_at)).toBeGreaterThanOrEqual(Date.parse(invitations[0].expires_at));

      // A member's role changed; each member's choice shows the role they hold.
      const memberRole = page.getByRole('form', { name: `Role of ${member.email}` });
      const ownerRole = page.getByRole('form', { name: `Role of ${ADMIN.email}` });
      await expect(memberRole.getByRole('combobox', { name: 'Role' }).inputValue()).resolves.toBe('member');
      await expect(ownerRole.getByRole('combobox', { name: 'Role' }).inputValue()).resolves.toBe('owner');
      await expect(invite.getByRole('combobox', { name: 'Role' }).inputValue()).resolves.toBe('member');
      await memberRole.getByRole('combobox', { name: 'Role' }).selectOption(roleKey);
      await memberRole.getByRole('button', { name: 'Change role' }).click();
      await page.getByText(`${member.email} is now ${roleKey}.`).waitFor();
      const rolesOf = async () =>
        Object.fromEntries(
          ((await api.get(`/api/organizations/${id}/members`)) as Array<{ user: { id: number }; role: string }>).map((m) => [
            m.user.id,
            m.role,
          ]),
        );
      await expect(rolesOf()).resolves.toEqual({ [adminId]: 'owner', [member.id]: roleKey });

      // The last owner cannot be demoted: the API's 409 and its message, shown.
      await expect(memberRole.getByRole('combobox', { name: 'Role' }).inputValue()).resolves.toBe(roleKey);
      await ownerRole.getByRole('combobox', { name: 'Role' }).selectOption('admin');
      await ownerRole.getByRole('button', { name: 'Change role' }).click();
      const refused = await rig.t.put(`/api/organizations/${id}/members/${adminId}`, { role: 'admin' }, { token: admin });
      expect(refused.status).toBe(409);
      await expect(ownerRole.getByRole('alert').textContent()).resolves.toBe(refused.body.error.message);
      await expect(rolesOf()).resolves.toEqual({ [adminId]: 'owner', [member.id]: roleKey });

      // Nor removed: the API's 409 message, in the dialog that asked.
      const leave = await confirm(
        page,
        page.getByRole('button', { name: `Remove ${ADMIN.email}` }),
        `Remove ${ADMIN.email} from the organisation?`,
        'Remove member',
      );
      const kept = await rig.t.delete(`/api/organizations/${id}/members/${adminId}`, { token: admin });
      expect(kept.status).toBe(409);
      await expect(leave.getByRole('alert').textContent()).resolves.toBe(kept.body.error.message);
      await leave.getByRole('button', { name: 'Cancel' }).click();
      await expect(rolesOf()).resolves.toEqual({ [adminId]: 'owner', [member.id]: roleKey });

      // A domain: its DNS record shown, a verification before it is published refused with the API's
      // message, then verified once the DNS server publishes it.
      const addDomain = page.getByRole('form', { name: 'Add a domain' });
      await addDomain.getByRole('textbox', { name: /^Domain/ }).fill(domain);
      await addDomain.getByRole('button', { name: 'Add domain' }).click();
      const item = page.getByRole('listitem', { name: domain });
      const recordName = item.getByRole('textbox', { name: `Record name for ${domain}` });
      await recordName.waitFor();
      const [listed] = await api.get(`/api/organizations/${id}/domains`);
      expect(listed).toEqual(expect.objectContaining({ domain, verified: false }));
      await expect(recordName.inputValue()).resolves.toBe(`_account-verification.${domain}`);
      await expect(recordName.inputValue()).resolves.toBe(listed.verification.name);
      const value = await item.getByRole('textbox', { name: `Record value for ${domain}` }).inputValue();
      expect(value).toBe(listed.verification.value);
      await expect(seriousViolations(page)).resolves.toEqual([]);
      await item.getByRole('button', { name: `Verify ${domain}` }).click();
      const failed = await rig.t.post(`/api/organizations/${id}/domains/${domain}/verify`, undefined, { token: admin });
      expect(failed.status).toBe(400);
      expect(failed.body.error.code).toBe('VERIFICATION_FAILED');
      await expect(item.getByRole('alert').textContent()).resolves.toBe(failed.body.error.message);
      dns.records.set(`_account-verification.${domain}`, [value]);
      await item.getByRole('button', { name: `Verify ${domain}` }).click();
      await item.getByText('verified', { exact: true }).waitFor();
      expect(await api.get(`/api/organizations/${id}/domains`)).toEqual([
        expect.objectContaining({ domain, verified: true, verified_at: expect.any(String) }),
      ]);

      // The sign-in policy.
      const policy = page.getByRole('form', { name: 'Sign-in policy' });
      await policy.getByRole('checkbox', { name: /second factor/ }).check();
      await policy.getByRole('combobox', { name: /^Identity provider/ }).selectOption(provider);
      await policy.getByRole('checkbox', { name: /only through the identity provider/ }).check();
      await policy.getByRole('combobox', { name: /^Join by domain/ }).selectOption(roleKey);
      await expect(
        policy
          .getByRole('combobox', { name: /^Join by domain/ })
          .locator('option[value="owner"]')
          .count(),
      ).resolves.toBe(0);
      await policy.getByRole('button', { name: 'Save sign-in policy' }).click();
      await page.getByText('The sign-in policy is saved').waitFor();
      await expect(api.get(`/api/organizations/${id}/sign-in`)).resolves.toEqual({
        mfa_required: true,
        identity_provider: provider,
        sso_required: true,
        auto_join_role: roleKey,
      });
      // The screen, opened again, shows the policy saved.
      await openOrganization(page, slug, `Acme ${tail}`);
      await policy.getByRole('button', { name: 'Save sign-in policy' }).waitFor();
      await expect(policy.getByRole('combobox', { name: /^Identity provider/ }).inputValue()).resolves.toBe(provider);
      await expect(policy.getByRole('combobox', { name: /^Join by domain/ }).inputValue()).resolves.toBe(roleKey);
      await expect(policy.getByRole('checkbox', { name: /second factor/ }).isChecked()).resolves.toBe(true);
      await expect(seriousViolations(page)).resolves.toEqual([]);

      // Revoking the invitation.
      const revoked = await confirm(
        page,
        page.getByRole('button', { name: `Revoke the invitation to ${invitee}` }),
        `Revoke the invitation to ${invitee}?`,
        'Revoke invitation',
      );
      await revoked.waitFor({ state: 'hidden' });
      await page.getByText('No invitation is waiting for an answer').waitFor();
      await expect(api.get(`/api/organizations/${id}/invitations`)).resolves.toEqual([]);

      // A role a member holds cannot be deleted: the API's 409 message, in the dialog.
      await open(page, 'Roles', 'Roles');
      const held = await confirm(
        page,
        page.getByRole('button', { name: `Delete ${roleKey}` }),
        `Delete the role ${roleKey}?`,
        'Delete role',
      );
      const heldAnswer = await rig.t.delete(`/api/organization-roles/${roleKey}`, { token: admin });
      expect(heldAnswer.status).toBe(409);
      await expect(held.getByRole('alert').textContent()).resolves.toBe(heldAnswer.body.error.message);
      await held.getByRole('button', { name: 'Cancel' }).click();
      expect((await api.get('/api/organization-roles')).map((role: { key: string }) => role.key)).toContain(roleKey);

      // Renamed, then deleted, from its screen.
      await openOrganization(page, slug, `Acme ${tail}`);
      const details = page.getByRole('form', { name: 'Name and slug' });
      await details.getByRole('textbox', { name: 'Name', exact: true }).fill(`Acme ${tail} Ltd`);
      await details.getByRole('textbox', { name: /^Slug/ }).fill(`${slug}-ltd`);
      await details.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: `Acme ${tail} Ltd` }).waitFor();
      await expect(api.get(`/api/organizations/${id}`)).resolves.toEqual(
        expect.objectContaining({ name: `Acme ${tail} Ltd`, slug: `${slug}-ltd` }),
      );
      const gone = await confirm(
        page,
        page.getByRole('button', { name: 'Delete organisation' }),
        `Delete Acme ${tail} Ltd?`,
        'Delete organisation',
      );
      await gone.waitFor({ state: 'hidden' });
      await page.getByRole('heading', { level: 1, name: 'Organisations' }).waitFor();
      await until(
        async () => (await rig.t.get(`/api/organizations/${id}`, { token: admin })).status === 404,
        'the organisation to be gone',
      );
      await expect(api.get(`/api/organizations?q=${slug}`)).resolves.toEqual([]);

      // Now unheld, the role goes.
      await open(page, 'Roles', 'Roles');
      const unheld = await confirm(
        page,
        page.getByRole('button', { name: `Delete ${roleKey}` }),
        `Delete the role ${roleKey}?`,
        'Delete role',
      );
      await unheld.waitFor({ state: 'hidden' });
      expect((await api.get('/api/organization-roles')).map((role: { key: string }) => role.key)).not.toContain(roleKey);

      expect(foreignRequests(rig.requests, rig.origin)).toEqual([]);
      expect(errors).toEqual([]);
      await context.close();
    },
    CONSOLE_TIMEOUT,
  );
});
