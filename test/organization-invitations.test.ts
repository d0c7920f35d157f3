import { sql } from 'kysely';
import type { OrganizationInvitationTable } from '../src/organizations/invitation-repository.js';
import type { OrganizationMemberTable } from '../src/organizations/organization-repository.js';
import { startTestApp, uniqueEmail, type TestContext } from './support/app.js';
import { auditTable } from './support/audit.js';
import { assertWebhookMatchesContract } from './support/contract.js';
import { expectError } from './support/expect.js';
import { linkToken, startSmtpServer, type ReceivedMail, type TestSmtpServer } from './support/smtp.js';
import { until } from './support/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.js';
import { cli } from './support/cli.js';
import { addMember, subscribe, verifiedUser } from './support/organizations.js';

const APP_URL = 'https://app.example.test';
const INVITED = 'You are invited to join an organization';
const WEEK_MS = 10080 * 60_000;

let smtp: TestSmtpServer;
let hooks: WebhookReceiver;
let t: TestContext;

beforeAll(async () => {
  smtp = await startSmtpServer();
  hooks = await startWebhookReceiver();
  t = await startTestApp({
    APP_URL,
    SMTP_URL: smtp.url,
    MAIL_POLL_INTERVAL_MS: '100',
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    WEBHOOK_POLL_INTERVAL_MS: '50',
  });
  await subscribe(t, hooks, [
    'organization.invitation_created',
    'organization.invitation_accepted',
    'organization.invitation_declined',
    'organization.invitation_revoked',
    'organization.member_added',
  ]);
});
afterAll(async () => {
  await t?.close();
  await hooks?.close();
  await smtp?.close();
});

const tables = () =>
  t.db.withTables<{ organization_members: OrganizationMemberTable; organization_invitations: OrganizationInvitationTable }>();

async function createOrg(token: string, name = 'Acme Corp'): Promise<{ id: number; slug: string; name: string }> {
  const res = await t.post('/api/organizations', { name }, { token });
  expect(res.status).toBe(201);
  return res.body.data;
}

async function invite(token: string, orgId: number, email: string, role = 'member'): Promise<{ id: string; expires_at: string }> {
  const res = await t.post(`/api/organizations/${orgId}/invitations`, { email, role }, { token });
  expect(res.status).toBe(201);
  return res.body.data;
}

const invitationMails = (address: string) => smtp.to(address).filter((m) => m.subject === INVITED);

/** The n-th (1-based) invitation mail to the address, waiting for it. */
const nthInvitation = (address: string, n = 1): Promise<ReceivedMail> =>
  until(() => invitationMails(address)[n - 1], `invitation mail #${n} to ${address}`, 10_000);

const isMember = async (orgId: number, userId: number) =>
  (await tables()
    .selectFrom('organization_members')
    .select('role')
    .where('organization_id', '=', orgId)
    .where('user_id', '=', userId)
    .executeTakeFirst()) !== undefined;

const pending = (id: string) => tables().selectFrom('organization_invitations').selectAll().where('id', '=', id).executeTakeFirst();

const accept = (id: string, token: string) => t.post(`/api/auth/invitations/${id}/accept`, undefined, { token });
const decline = (id: string, token: string) => t.post(`/api/auth/invitations/${id}/decline`, undefined, { token });

describe('inviting a person without an account', () => {
  it('mails a link; they sign up, verify the address, see the invitation and accept it', async () => {
    const owner = await verifiedUser(t);
    const org = await createOrg(owner.access, 'Invited Inc');
    const email = uniqueEmail('grace');
    const res = await t.post(
      `/api/organizations/${org.id}/invitations`,
      { email: `  ${email.toUpperCase()} `, role: 'member' },
      { token: owner.access },
    );
    expect(res.status).toBe(201);
    const invitation = res.body.data;
    expect(invitation).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      organization: { id: org.id, slug: org.slug, name: 'Invited Inc' },
      email,
      role: 'member',
      invited_by: { id: owner.id, email: owner.email, name: owner.name },
      created_at: expect.any(String),
      expires_at: expect.any(String),
    });
    const lifetime = Date.parse(invitation.expires_at) - Date.parse(invitation.created_at);
    expect(Math.abs(lifetime - WEEK_MS)).toBeLessThan(60_000);

    const mail = await nthInvitation(email);
    const link = `${APP_URL}/console/invitations/${invitation.id}`;
    expect(mail.text).toContain(link);
    expect(mail.html).toContain(link);
    expect(mail.text).toContain('Invited Inc');
    expect(mail.text).toContain('7 days');

    // They sign up: until the address is verified, the invitation is neither listed nor accepted.
    const grace = await t.register({ email });
    expect((await t.get('/api/auth/invitations', { token: grace.access })).body.data).toEqual([]);
    expectError(await accept(invitation.id, grace.access), 403, 'FORBIDDEN');
    expect(await isMember(org.id, grace.id)).toBe(false);

    const verification = await until(
      () => smtp.to(email).find((m) => m.subject === 'Confirm your e-mail address'),
      'the verification mail',
      10_000,
    );
    expect((await t.post('/api/auth/verify-email', { token: linkToken(verification, 'verify-email') })).status).toBe(200);

    const mine = await t.get('/api/auth/invitations', { token: grace.access });
    expect(mine.status).toBe(200);
    expect(mine.body.data).toEqual([invitation]);

    const accepted = await accept(invitation.id, grace.access);
    expect(accepted.status).toBe(200);
    expect(accepted.body.data).toEqual({
      organization: expect.objectContaining({ id: org.id, slug: org.slug }),
      role: 'member',
      permissions: ['org:read', 'members:read'],
    });
    expect(await isMember(org.id, grace.id)).toBe(true);
    expect(await pending(invitation.id)).toBeUndefined();
    // Used up: a second acceptance finds nothing.
    expectError(await accept(invitation.id, grace.access), 404, 'NOT_FOUND');

    const rows = await auditTable(t)
      .selectFrom('audit_events')
      .select(['event_type', 'actor_user_id', 'subject_user_id'])
      .where('event_type', 'like', 'organization.%')
      .where(sql<boolean>`details->>'organization_id' = ${String(org.id)}`)
      .orderBy('id')
      .execute();
    expect(rows).toEqual([
      { event_type: 'organization.created', actor_user_id: owner.id, subject_user_id: null },
      { event_type: 'organization.member_added', actor_user_id: owner.id, subject_user_id: owner.id },
      { event_type: 'organization.invitation_created', actor_user_id: owner.id, subject_user_id: null },
      { event_type: 'organization.invitation_accepted', actor_user_id: grace.id, subject_user_id: grace.id },
      { event_type: 'organization.member_added', actor_user_id: grace.id, subject_user_id: grace.id },
    ]);

    const ofOrg = () => hooks.received.filter((r) => r.payload.data.organization?.id === org.id);
    const types = [
      'organization.member_added',
      'organization.invitation_created',
      'organization.invitation_accepted',
      'organization.member_added',
    ];
    await until(() => ofOrg().length === types.length, 'the invitation webhooks');
    expect(ofOrg().map((r) => r.payload.type)).toEqual(types);
    for (const r of ofOrg()) assertWebhookMatchesContract(r.payload.type, r.payload);
    const about = { id: invitation.id, email, role: 'member' };
    expect(ofOrg()[1].payload.data).toEqual({ organization: { id: org.id, slug: org.slug, name: 'Invited Inc' }, invitation: about });
    expect(ofOrg()[2].payload.data).toEqual({
      organization: { id: org.id, slug: org.slug, name: 'Invited Inc' },
      member: { user: { id: grace.id, email, name: grace.name }, role: 'member' },
      invitation: about,
    });
  });
});

describe('the command line', () => {
  it('invites from no one in particular; the service mails the link once it runs, and the person accepts as any invitee', async () => {
    const env = { APP_URL, SMTP_URL: smtp.url, MAIL_POLL_INTERVAL_MS: '100' };
    const c = await startTestApp(env);
    const owner = await verifiedUser(c);
    const org = (await c.post('/api/organizations', { name: 'Operated Ltd' }, { token: owner.access })).body.data;
    const email = uniqueEmail('operated');
    // The embedded database serves one process: the operator stops the server first.
    await c.stop();
    let id = '';
    try {
      const invited = await cli(
        c,
        ['organizations', 'invite', '--slug', org.slug, '--email', `  ${email.toUpperCase()}`, '--role', 'owner'],
        { APP_URL },
      );
      expect(invited).toEqual({
        code: 0,
        stdout: expect.stringMatching(
          new RegExp(
            `^invited ${email} to ${org.slug} as owner: invitation ([0-9a-f-]{36}), mailed by the running service, valid until \\S+Z\n$`,
          ),
        ),
        stderr: '',
      });
      id = /invitation ([0-9a-f-]{36})/.exec(invited.stdout)![1];
      // The rules of the API's invitations hold.
      expect(await cli(c, ['organizations', 'invite', '--slug', org.slug, '--email', email, '--role', 'member'], { APP_URL })).toEqual({
        code: 1,
        stdout: '',
        stderr: 'error: This address has a pending invitation already: resend it, or revoke it first\n',
      });
      expect(
        await cli(c, ['organizations', 'invite', '--slug', org.slug, '--email', owner.email, '--role', 'member'], { APP_URL }),
      ).toEqual({
        code: 1,
        stdout: '',
        stderr: 'error: The account with this address is a member of the organization already\n',
      });
      expect(
        (await cli(c, ['organizations', 'invite', '--slug', 'nowhere', '--email', email, '--role', 'member'], { APP_URL })).stderr,
      ).toBe('error: no organization has the slug "nowhere"\n');
      expect(
        (await cli(c, ['organizations', 'invite', '--slug', org.slug, '--email', email, '--role', 'emperor'], { APP_URL })).stderr,
      ).toBe('error: no role has the key "emperor"\n');
      expect(
        (await cli(c, ['organizations', 'invite', '--slug', org.slug, '--email', 'not-an-address', '--role', 'member'], { APP_URL })).code,
      ).toBe(2);
      expect((await cli(c, ['organizations', 'invite', '--slug', org.slug, '--email', email], { APP_URL })).code).toBe(2);
    } finally {
      const again = await startTestApp(env, { sameDatabaseAs: c });
      try {
        const mail = await until(() => smtp.to(email).find((m) => m.subject === INVITED), 'the invitation mail', 10_000);
        expect(mail.text).toContain(`${APP_URL}/console/invitations/${id}`);
        expect(mail.text).toContain('You were invited to join Operated Ltd as owner.');

        const listed = await again.get(`/api/organizations/${org.id}/invitations`, { token: owner.access });
        expect(listed.body.data).toEqual([expect.objectContaining({ id, email, role: 'owner', invited_by: null })]);

        const invitee = await verifiedUser(again, email);
        expect((await again.post(`/api/auth/invitations/${id}/accept`, undefined, { token: invitee.access })).status).toBe(200);
        const members = await again.get(`/api/organizations/${org.id}/members`, { token: owner.access });
        expect(members.body.data.map((m: { user: { id: number }; role: string }) => [m.user.id, m.role])).toEqual([
          [owner.id, 'owner'],
          [invitee.id, 'owner'],
        ]);
        const audit = await auditTable(again)
          .selectFrom('audit_events')
          .select(['event_type', 'actor_user_id', 'subject_user_id'])
          .where('event_type', '=', 'organization.invitation_created')
          .execute();
        expect(audit).toEqual([{ event_type: 'organization.invitation_created', actor_user_id: null, subject_user_id: null }]);
      } finally {
        await again.stop();
        await c.database.drop();
      }
    }
  });
});

describe('a forwarded link', () => {
  it('lets no one but the verified holder of the invited address join', async () => {
    const owner = await verifiedUser(t);
    const org = await createOrg(owner.access);
    const invitee = await verifiedUser(t);
    const { id } = await invite(owner.access, org.id, invitee.email, 'admin');
    const link = `${APP_URL}/console/invitations/${id}`;
    expect((await nthInvitation(invitee.email)).text).toContain(link);

    // Another signed-in person, verified, with the link (or its id): the invitation is not theirs.
    const mallory = await verifiedUser(t);
    expectError(await accept(id, mallory.access), 404, 'NOT_FOUND');
    expectError(await decline(id, mallory.access), 404, 'NOT_FOUND');
    expect((await t.get('/api/auth/invitations', { token: mallory.access })).body.data).toEqual([]);
    // Nor does a deployment admin join by it.
    const admin = await t.adminToken();
    expectError(await accept(id, admin), 404, 'NOT_FOUND');
    expect(await isMember(org.id, mallory.id)).toBe(false);
    expect(await pending(id)).toBeDefined();

    // The invited person still can.
    const res = await accept(id, invitee.access);
    expect(res.status).toBe(200);
    expect(res.body.data.role).toBe('admin');
  });

  it('is refused to the holder of an account at the invited address while that address is unverified', async () => {
    const owner = await verifiedUser(t);
    const org = await createOrg(owner.access);
    const unverified = await t.register();
    const { id } = await invite(owner.access, org.id, unverified.email);
    expectError(await accept(id, unverified.access), 403, 'FORBIDDEN');
    expectError(await decline(id, unverified.access), 403, 'FORBIDDEN');
    expect(await isMember(org.id, unverified.id)).toBe(false);
    expect(await pending(id)).toBeDefined();
  });
});

describe('who may invite', () => {
  it('needs members:invite; only an owner invites an owner; the role must exist', async () => {
    const owner = await verifiedUser(t);
    const org = await createOrg(owner.access);
    const orgAdmin = await verifiedUser(t);
    const member = await verifiedUser(t);
    const stranger = await verifiedUser(t);
    await addMember(t, org.id, orgAdmin.id, 'admin');
    await addMember(t, org.id, member.id, 'member');
    const path = `/api/organizations/${org.id}/invitations`;

    expectError(await t.post(path, { email: uniqueEmail(), role: 'member' }, { token: member.access }), 403, 'FORBIDDEN');
    expectError(await t.get(path, { token: member.access }), 403, 'FORBIDDEN');
    expectError(await t.post(path, { email: uniqueEmail(), role: 'member' }, { token: stranger.access }), 404, 'NOT_FOUND');
    expectError(await t.post(path, { email: uniqueEmail(), role: 'owner' }, { token: orgAdmin.access }), 403, 'FORBIDDEN');
    expectError(await t.post(path, { email: uniqueEmail(), role: 'no-such-role' }, { token: owner.access }), 422, 'VALIDATION_ERROR');
    expectError(await t.post(path, { email: 'not-an-address', role: 'member' }, { token: owner.access }), 422, 'VALIDATION_ERROR');

    const byAdmin = await invite(orgAdmin.access, org.id, uniqueEmail(), 'member');
    const toOwner = await invite(owner.access, org.id, uniqueEmail(), 'owner');
    // Only an owner resends an invitation to be an owner.
    expectError(await t.post(`${path}/${toOwner.id}/resend`, undefined, { token: orgAdmin.access }), 403, 'FORBIDDEN');

    const list = await t.get(path, { token: orgAdmin.access });
    expect(list.status).toBe(200);
    expect(list.body.data.map((i: { id: string }) => i.id)).toEqual([toOwner.id, byAdmin.id]);
    const rows = await tables().selectFrom('organization_invitations').select('id').where('organization_id', '=', org.id).execute();
    expect(rows).toHaveLength(2);
  });

  it('keeps one pending invitation per address and organisation, and none for a member', async () => {
    const owner = await verifiedUser(t);
    const org = await createOrg(owner.access);
    const other = await createOrg(owner.access, 'Other Org');
    const email = uniqueEmail('twice');
    await invite(owner.access, org.id, email);
    const path = `/api/organizations/${org.id}/invitations`;
    expectError(await t.post(path, { email, role: 'admin' }, { token: owner.access }), 409, 'CONFLICT');
    expectError(await t.post(path, { email: email.toUpperCase(), role: 'member' }, { token: owner.access }), 409, 'CONFLICT');
    // Another organisation may invite the same address.
    await invite(owner.access, other.id, email);
    expectError(await t.post(path, { email: owner.email, role: 'member' }, { token: owner.access }), 409, 'CONFLICT');
    const rows = await tables().selectFrom('organization_invitations').select('role').where('email', '=', email).execute();
    expect(rows).toEqual([{ role: 'member' }, { role: 'member' }]);
  });
});

describe('expiry and resending', () => {
  it('refuses an expired invitation until it is resent, which mails it again and renews its expiry', async () => {
    const owner = await verifiedUser(t);
    const org = await createOrg(owner.access);
    const invitee = await verifiedUser(t);
    const { id } = await invite(owner.access, org.id, invitee.email);
    await nthInvitation(invitee.email);
    await tables()
      .updateTable('organization_invitations')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', id)
      .execute();

    expectError(await accept(id, invitee.access), 409, 'CONFLICT');
    expect(await isMember(org.id, invitee.id)).toBe(false);
    expect((await t.get('/api/auth/invitations', { token: invitee.access })).body.data).toEqual([]);

    const resent = await t.post(`/api/organizations/${org.id}/invitations/${id}/resend`, undefined, { token: owner.access });
    expect(resent.status).toBe(202);
    expect(resent.body.data.id).toBe(id);
    expect(Math.abs(Date.parse(resent.body.data.expires_at) - (Date.now() + WEEK_MS))).toBeLessThan(60_000);
    expect((await nthInvitation(invitee.email, 2)).text).toContain(`${APP_URL}/console/invitations/${id}`);

    expect((await accept(id, invitee.access)).status).toBe(200);
    expect(await isMember(org.id, invitee.id)).toBe(true);
  });

  it('lets a new invitation replace an expired one', async () => {
    const owner = await verifiedUser(t);
    const org = await createOrg(owner.access);
    const email = uniqueEmail('late');
    const first = await invite(owner.access, org.id, email);
    await tables()
      .updateTable('organization_invitations')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', first.id)
      .execute();
    const second = await invite(owner.access, org.id, email, 'admin');
    expect(second.id).not.toBe(first.id);
    expect(await pending(first.id)).toBeUndefined();
  });

  it('keeps an expired invitation listed, and sendable again, for HOUSEKEEPING_RETENTION_HOURS; then housekeeping removes it', async () => {
    const owner = await verifiedUser(t);
    const org = await createOrg(owner.access);
    const live = await invite(owner.access, org.id, uniqueEmail('live'));
    const lately = await invite(owner.access, org.id, uniqueEmail('lately'));
    const longAgo = await invite(owner.access, org.id, uniqueEmail('long-ago'));
    const expire = (id: string, hoursAgo: number) =>
      tables()
        .updateTable('organization_invitations')
        .set({ expires_at: new Date(Date.now() - hoursAgo * 3600_000) })
        .where('id', '=', id)
        .execute();
    await expire(lately.id, 1);
    await expire(longAgo.id, t.config.housekeeping.retentionHours + 1);
    const listed = async () =>
      ((await t.get(`/api/organizations/${org.id}/invitations`, { token: owner.access })).body.data as { id: string }[]).map(
        (invitation) => invitation.id,
      );
    expect((await listed()).sort()).toEqual([live.id, lately.id, longAgo.id].sort());

    // The app's own pass may be under way: wait for one of ours to go through.
    const pass = await until(async () => {
      const result = await t.app.housekeeping.purge();
      return result.status === 'done' && result;
    }, 'a housekeeping pass');
    expect(pass.removed.organization_invitations ?? 0).toBeGreaterThanOrEqual(1);
    expect(await pending(longAgo.id)).toBeUndefined();
    expect((await listed()).sort()).toEqual([live.id, lately.id].sort());
    const gone = await t.post(`/api/organizations/${org.id}/invitations/${longAgo.id}/resend`, undefined, { token: owner.access });
    expectError(gone, 404, 'NOT_FOUND');

    // The one that expired within the retention is still there to be sent again.
    expect((await t.post(`/api/organizations/${org.id}/invitations/${lately.id}/resend`, undefined, { token: owner.access })).status).toBe(
      202,
    );
  });

  it('reads ORG_INVITATION_EXPIRE_MINUTES', async () => {
    const short = await startTestApp({ ORG_INVITATION_EXPIRE_MINUTES: '90' });
    try {
      const owner = await short.register();
      await short.db.updateTable('users').set({ email_verified: true }).where('id', '=', owner.id).execute();
      const org = (await short.post('/api/organizations', { name: 'Short' }, { token: owner.access })).body.data;
      const res = await short.post(
        `/api/organizations/${org.id}/invitations`,
        { email: uniqueEmail(), role: 'member' },
        { token: owner.access },
      );
      expect(res.status).toBe(201);
      expect(Date.parse(res.body.data.expires_at) - Date.parse(res.body.data.created_at)).toBeCloseTo(90 * 60_000, -4);
    } finally {
      await short.close();
    }
  });
});

describe('revoking and declining', () => {
  it('revokes: the invitation accepts nothing any more', async () => {
    const owner = await verifiedUser(t);
    const org = await createOrg(owner.access);
    const invitee = await verifiedUser(t);
    const { id } = await invite(owner.access, org.id, invitee.email);
    const path = `/api/organizations/${org.id}/invitations/${id}`;
    const other = await createOrg(owner.access, 'Elsewhere');
    // Only through its own organisation.
    expectError(await t.delete(`/api/organizations/${other.id}/invitations/${id}`, { token: owner.access }), 404, 'NOT_FOUND');

    expect((await t.delete(path, { token: owner.access })).status).toBe(204);
    expectError(await t.delete(path, { token: owner.access }), 404, 'NOT_FOUND');
    expectError(await accept(id, invitee.access), 404, 'NOT_FOUND');
    expect(await isMember(org.id, invitee.id)).toBe(false);
    expect((await t.get(`/api/organizations/${org.id}/invitations`, { token: owner.access })).body.data).toEqual([]);
    const events = await auditTable(t)
      .selectFrom('audit_events')
      .select(['event_type', 'actor_user_id', 'subject_user_id'])
      .where(sql<boolean>`details->>'invitation_id' = ${id}`)
      .orderBy('id')
      .execute();
    expect(events).toEqual([
      { event_type: 'organization.invitation_created', actor_user_id: owner.id, subject_user_id: null },
      { event_type: 'organization.invitation_revoked', actor_user_id: owner.id, subject_user_id: null },
    ]);
  });

  it('declines: the invitee does not join, and the invitation is gone', async () => {
    const owner = await verifiedUser(t);
    const org = await createOrg(owner.access);
    const invitee = await verifiedUser(t);
    const { id } = await invite(owner.access, org.id, invitee.email);
    expect((await decline(id, invitee.access)).status).toBe(204);
    expect(await pending(id)).toBeUndefined();
    expectError(await accept(id, invitee.access), 404, 'NOT_FOUND');
    expect(await isMember(org.id, invitee.id)).toBe(false);
    const declined = await until(
      () => hooks.received.find((r) => r.payload.type === 'organization.invitation_declined' && r.payload.data.invitation?.id === id),
      'the declined webhook',
    );
    assertWebhookMatchesContract(declined.payload.type, declined.payload);
    expect(declined.payload.data).toEqual({
      organization: { id: org.id, slug: org.slug, name: org.name },
      invitation: { id, email: invitee.email, role: 'member' },
    });
  });
});
