import { sql } from 'kysely';
import type { OrganizationMemberTable } from '../src/organizations/organization-repository.js';
import { startTestApp, type RegisteredUser, type TestContext } from './support/app.js';
import { auditTable } from './support/audit.js';
import { assertWebhookMatchesContract } from './support/contract.js';
import { expectError } from './support/expect.js';
import { claimsOf } from './support/jwt.js';
import { until } from './support/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.js';
import { cli } from './support/cli.js';
import { addMember, subscribe, verifiedUser } from './support/organizations.js';

const ALL = ['org:read', 'org:update', 'org:delete', 'members:read', 'members:invite', 'members:update', 'members:remove'];

let t: TestContext;
let admin: string;
let hooks: WebhookReceiver;

beforeAll(async () => {
  hooks = await startWebhookReceiver();
  t = await startTestApp({ WEBHOOK_ALLOW_PRIVATE_URLS: 'true', WEBHOOK_POLL_INTERVAL_MS: '50' });
  admin = await t.adminToken();
  await subscribe(t, hooks, [
    'organization.created',
    'organization.updated',
    'organization.deleted',
    'organization.member_added',
    'organization.member_removed',
    'organization.role_changed',
  ]);
});
afterAll(async () => {
  await t?.close();
  await hooks?.close();
});

const members = () => t.db.withTables<{ organization_members: OrganizationMemberTable }>();

async function createOrg(
  token: string,
  body: { name: string; slug?: string } = { name: 'Acme Corp' },
): Promise<{ id: number; slug: string }> {
  const res = await t.post('/api/organizations', body, { token });
  expect(res.status).toBe(201);
  return res.body.data;
}

async function refresh(refreshToken: string, organizationId?: number | null) {
  const body =
    organizationId === undefined ? { refresh_token: refreshToken } : { refresh_token: refreshToken, organization_id: organizationId };
  return t.post('/api/auth/refresh', body);
}

describe('creating', () => {
  it('makes the caller its owner, with a slug from the name when none is given', async () => {
    const owner = await verifiedUser(t);
    const res = await t.post('/api/organizations', { name: '  Ümlaut Industries ' }, { token: owner.access });
    expect(res.status).toBe(201);
    expect(res.body.data).toEqual({
      id: expect.any(Number),
      slug: 'umlaut-industries',
      name: 'Ümlaut Industries',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const mine = await t.get('/api/auth/organizations', { token: owner.access });
    expect(mine.body.data).toEqual([{ organization: res.body.data, role: 'owner', permissions: ALL }]);
    // The same name again gets a slug of its own.
    const again = await t.post('/api/organizations', { name: 'Ümlaut Industries' }, { token: owner.access });
    expect(again.body.data.slug).toMatch(/^umlaut-industries-[0-9a-f]{6}$/);
  });

  it('refuses a taken slug (409), a slug of digits alone (422) and an unverified user (403)', async () => {
    const owner = await verifiedUser(t);
    await createOrg(owner.access, { name: 'Taken', slug: 'taken-slug' });
    expectError(await t.post('/api/organizations', { name: 'Other', slug: 'taken-slug' }, { token: owner.access }), 409, 'CONFLICT');
    expectError(await t.post('/api/organizations', { name: 'Digits', slug: '1234' }, { token: owner.access }), 422, 'VALIDATION_ERROR');
    expectError(await t.post('/api/organizations', { name: 'Caps', slug: 'Acme' }, { token: owner.access }), 422, 'VALIDATION_ERROR');
    const unverified = await t.register();
    expectError(await t.post('/api/organizations', { name: 'Nope' }, { token: unverified.access }), 403, 'FORBIDDEN');
  });

  it('is for admins alone with ORG_CREATION=admin', async () => {
    const strict = await startTestApp({ ORG_CREATION: 'admin' });
    try {
      const user = await strict.register();
      await strict.db.updateTable('users').set({ email_verified: true }).where('id', '=', user.id).execute();
      expectError(await strict.post('/api/organizations', { name: 'Mine' }, { token: user.access }), 403, 'FORBIDDEN');
      const res = await strict.post('/api/organizations', { name: 'Theirs' }, { token: await strict.adminToken() });
      expect(res.status).toBe(201);
    } finally {
      await strict.close();
    }
  });
});

describe('permissions', () => {
  let owner: RegisteredUser;
  let orgAdmin: RegisteredUser;
  let member: RegisteredUser;
  let outsider: RegisteredUser;
  let org: { id: number };

  beforeAll(async () => {
    [owner, orgAdmin, member, outsider] = await Promise.all([verifiedUser(t), verifiedUser(t), verifiedUser(t), verifiedUser(t)]);
    org = await createOrg(owner.access, { name: 'Perms', slug: 'perms' });
    await addMember(t, org.id, orgAdmin.id, 'admin');
    await addMember(t, org.id, member.id, 'member');
  });

  it('tells a non-member the organisation and everything under it do not exist', async () => {
    const token = outsider.access;
    for (const res of [
      await t.get(`/api/organizations/${org.id}`, { token }),
      await t.put(`/api/organizations/${org.id}`, { name: 'Mine now' }, { token }),
      await t.delete(`/api/organizations/${org.id}`, { token }),
      await t.get(`/api/organizations/${org.id}/members`, { token }),
      await t.put(`/api/organizations/${org.id}/members/${member.id}`, { role: 'admin' }, { token }),
      await t.delete(`/api/organizations/${org.id}/members/${member.id}`, { token }),
      await t.delete(`/api/organizations/${org.id}/members/${outsider.id}`, { token }),
    ]) {
      expectError(res, 404, 'NOT_FOUND');
    }
  });

  it('lets a member read, and refuses them each permission their role lacks', async () => {
    const token = member.access;
    expect((await t.get(`/api/organizations/${org.id}`, { token })).status).toBe(200);
    const list = await t.get(`/api/organizations/${org.id}/members`, { token });
    expect(list.status).toBe(200);
    expect(list.body.data.map((m: { user: { id: number }; role: string }) => [m.user.id, m.role])).toEqual([
      [owner.id, 'owner'],
      [orgAdmin.id, 'admin'],
      [member.id, 'member'],
    ]);
    expect(list.body.data[0]).toEqual({
      user: { id: owner.id, email: owner.email, name: owner.name },
      role: 'owner',
      joined_at: expect.any(String),
    });
    expect(list.body.meta).toEqual({ page: 1, per_page: 20, total: 3, pages: 1, has_next: false, has_prev: false });
    expectError(await t.put(`/api/organizations/${org.id}`, { name: 'Renamed' }, { token }), 403, 'FORBIDDEN');
    expectError(await t.delete(`/api/organizations/${org.id}`, { token }), 403, 'FORBIDDEN');
    expectError(await t.put(`/api/organizations/${org.id}/members/${orgAdmin.id}`, { role: 'member' }, { token }), 403, 'FORBIDDEN');
    expectError(await t.delete(`/api/organizations/${org.id}/members/${orgAdmin.id}`, { token }), 403, 'FORBIDDEN');
  });

  it('lets an organisation admin change it and its members, but not delete it nor touch an owner', async () => {
    const token = orgAdmin.access;
    const renamed = await t.put(`/api/organizations/${org.id}`, { name: 'Perms Inc' }, { token });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data.name).toBe('Perms Inc');
    expectError(await t.delete(`/api/organizations/${org.id}`, { token }), 403, 'FORBIDDEN');
    expectError(await t.put(`/api/organizations/${org.id}/members/${member.id}`, { role: 'owner' }, { token }), 403, 'FORBIDDEN');
    expectError(await t.put(`/api/organizations/${org.id}/members/${owner.id}`, { role: 'member' }, { token }), 403, 'FORBIDDEN');
    expectError(await t.delete(`/api/organizations/${org.id}/members/${owner.id}`, { token }), 403, 'FORBIDDEN');
    expectError(
      await t.put(`/api/organizations/${org.id}/members/${member.id}`, { role: 'no-such-role' }, { token }),
      422,
      'VALIDATION_ERROR',
    );
    expectError(await t.put(`/api/organizations/${org.id}/members/${outsider.id}`, { role: 'member' }, { token }), 404, 'NOT_FOUND');
  });

  it('decides from the stored membership, not from the claims the token carries', async () => {
    const login = await t.post('/api/auth/login/json', { email: member.email, password: member.password, organization_id: org.id });
    expect(claimsOf(login.body.data.access_token).org_role).toBe('member');
    await members().updateTable('organization_members').set({ role: 'admin' }).where('user_id', '=', member.id).execute();
    // The token still says `member`; the membership says `admin`, and that decides.
    expect((await t.put(`/api/organizations/${org.id}`, { name: 'Perms Inc' }, { token: login.body.data.access_token })).status).toBe(200);
    await members().updateTable('organization_members').set({ role: 'member' }).where('user_id', '=', member.id).execute();
  });

  it('lets a deployment admin do everything', async () => {
    expect((await t.get(`/api/organizations/${org.id}/members`, { token: admin })).status).toBe(200);
    expect((await t.put(`/api/organizations/${org.id}`, { slug: 'perms-inc' }, { token: admin })).body.data.slug).toBe('perms-inc');
    const other = await createOrg(owner.access, { name: 'Other', slug: 'perms-other' });
    expectError(await t.put(`/api/organizations/${org.id}`, { slug: 'perms-other' }, { token: admin }), 409, 'CONFLICT');
    expect((await t.delete(`/api/organizations/${other.id}`, { token: admin })).status).toBe(204);
  });
});

describe('members', () => {
  it('keeps the last owner: they can neither leave nor be demoted, until another owner exists', async () => {
    const [owner, second] = await Promise.all([verifiedUser(t), verifiedUser(t)]);
    const org = await createOrg(owner.access, { name: 'Owners', slug: 'owners' });
    const path = `/api/organizations/${org.id}/members`;
    expectError(await t.delete(`${path}/${owner.id}`, { token: owner.access }), 409, 'CONFLICT');
    expectError(await t.put(`${path}/${owner.id}`, { role: 'admin' }, { token: owner.access }), 409, 'CONFLICT');
    expectError(await t.put(`${path}/${owner.id}`, { role: 'admin' }, { token: admin }), 409, 'CONFLICT');

    await addMember(t, org.id, second.id, 'member');
    const promoted = await t.put(`${path}/${second.id}`, { role: 'owner' }, { token: owner.access });
    expect(promoted.status).toBe(200);
    expect(promoted.body.data).toEqual({
      user: { id: second.id, email: second.email, name: second.name },
      role: 'owner',
      joined_at: expect.any(String),
    });
    expect((await t.delete(`${path}/${owner.id}`, { token: owner.access })).status).toBe(204);
    expectError(await t.delete(`${path}/${second.id}`, { token: second.access }), 409, 'CONFLICT');
    expect(
      await members().selectFrom('organization_members').select(['user_id', 'role']).where('organization_id', '=', org.id).execute(),
    ).toEqual([{ user_id: second.id, role: 'owner' }]);
  });

  it('lets any member leave, and a member with members:remove remove others', async () => {
    const [owner, a, b] = await Promise.all([verifiedUser(t), verifiedUser(t), verifiedUser(t)]);
    const org = await createOrg(owner.access, { name: 'Leavers', slug: 'leavers' });
    await addMember(t, org.id, a.id, 'member');
    await addMember(t, org.id, b.id, 'member');
    expect((await t.delete(`/api/organizations/${org.id}/members/${a.id}`, { token: a.access })).status).toBe(204);
    expectError(await t.get(`/api/organizations/${org.id}`, { token: a.access }), 404, 'NOT_FOUND');
    expect((await t.delete(`/api/organizations/${org.id}/members/${b.id}`, { token: owner.access })).status).toBe(204);
    expect((await t.get('/api/auth/organizations', { token: b.access })).body.data).toEqual([]);
  });
});

describe('roles', () => {
  it('lists the built-in roles, and keeps them as they are', async () => {
    const res = await t.get('/api/organization-roles', { token: admin });
    expect(
      res.body.data.slice(0, 3).map((r: { key: string; permissions: string[]; built_in: boolean }) => [r.key, r.built_in, r.permissions]),
    ).toEqual([
      ['admin', true, ALL.filter((p) => p !== 'org:delete')],
      ['member', true, ['org:read', 'members:read']],
      ['owner', true, ALL],
    ]);
    expectError(await t.put('/api/organization-roles/member', { name: 'Member', permissions: ALL }, { token: admin }), 409, 'CONFLICT');
    expectError(await t.delete('/api/organization-roles/owner', { token: admin }), 409, 'CONFLICT');
    const user = await verifiedUser(t);
    expectError(await t.get('/api/organization-roles', { token: user.access }), 403, 'FORBIDDEN');
    expectError(
      await t.post('/api/organization-roles', { key: 'mine', name: 'Mine', permissions: [] }, { token: user.access }),
      403,
      'FORBIDDEN',
    );
  });

  it('adds the deployment’s own: given to members, carried in their tokens, not deleted while held', async () => {
    const created = await t.post(
      '/api/organization-roles',
      { key: 'billing', name: 'Billing', permissions: ['org:read', 'invoices:read'] },
      { token: admin },
    );
    expect(created.status).toBe(201);
    expect(created.body.data).toEqual({
      key: 'billing',
      name: 'Billing',
      permissions: ['org:read', 'invoices:read'],
      built_in: false,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expectError(
      await t.post('/api/organization-roles', { key: 'billing', name: 'Again', permissions: [] }, { token: admin }),
      409,
      'CONFLICT',
    );

    const [owner, clerk] = await Promise.all([verifiedUser(t), verifiedUser(t)]);
    const org = await createOrg(owner.access, { name: 'Billed', slug: 'billed' });
    await addMember(t, org.id, clerk.id, 'member');
    expect(
      (await t.put(`/api/organizations/${org.id}/members/${clerk.id}`, { role: 'billing' }, { token: owner.access })).body.data.role,
    ).toBe('billing');
    // Billing has no members:read.
    expectError(await t.get(`/api/organizations/${org.id}/members`, { token: clerk.access }), 403, 'FORBIDDEN');

    const updated = await t.put(
      '/api/organization-roles/billing',
      { name: 'Billing', permissions: ['org:read', 'invoices:read', 'invoices:pay'] },
      { token: admin },
    );
    expect(updated.body.data.permissions).toEqual(['org:read', 'invoices:read', 'invoices:pay']);
    const switched = await refresh(clerk.refresh, org.id);
    expect(claimsOf(switched.body.data.access_token)).toMatchObject({
      org_id: org.id,
      org_role: 'billing',
      org_permissions: ['org:read', 'invoices:read', 'invoices:pay'],
    });

    expectError(await t.delete('/api/organization-roles/billing', { token: admin }), 409, 'CONFLICT');
    await t.delete(`/api/organizations/${org.id}/members/${clerk.id}`, { token: owner.access });
    expect((await t.delete('/api/organization-roles/billing', { token: admin })).status).toBe(204);
    expectError(await t.delete('/api/organization-roles/billing', { token: admin }), 404, 'NOT_FOUND');
  });
});

describe('the admin list', () => {
  it('pages every organisation and finds them by name or slug', async () => {
    const owner = await verifiedUser(t);
    await createOrg(owner.access, { name: 'Zebra Findable', slug: 'zz-one' });
    await createOrg(owner.access, { name: 'Another', slug: 'zebra-findable-two' });
    const found = await t.get('/api/organizations?q=ZEBRA&per_page=1', { token: admin });
    expect(found.body.data.map((o: { slug: string }) => o.slug)).toEqual(['zz-one']);
    expect(found.body.meta).toEqual({ page: 1, per_page: 1, total: 2, pages: 2, has_next: true, has_prev: false });
    const bySlug = await t.get('/api/organizations?q=zebra-findable', { token: admin });
    expect(bySlug.body.data.map((o: { slug: string }) => o.slug)).toEqual(['zebra-findable-two']);
    const cursor = await t.get('/api/organizations?q=zebra&limit=1', { token: admin });
    expect(cursor.body.meta).toEqual({ next_cursor: cursor.body.data[0].id, has_more: true });
    expectError(await t.get('/api/organizations?page=1&limit=1', { token: admin }), 422, 'VALIDATION_ERROR');
    expectError(await t.get('/api/organizations', { token: owner.access }), 403, 'FORBIDDEN');
  });
});

describe('the active organisation', () => {
  it('is named at login: the access token carries org_id, org_role and org_permissions', async () => {
    const owner = await verifiedUser(t);
    const org = await createOrg(owner.access, { name: 'Claims', slug: 'claims' });
    const res = await t.post('/api/auth/login/json', { email: owner.email, password: owner.password, organization_id: org.id });
    expect(res.status).toBe(200);
    expect(claimsOf(res.body.data.access_token)).toMatchObject({ org_id: org.id, org_role: 'owner', org_permissions: ALL });
    // The session remembers it: a plain refresh keeps acting for it.
    const again = await refresh(res.body.data.refresh_token);
    expect(claimsOf(again.body.data.access_token)).toMatchObject({ org_id: org.id, org_role: 'owner' });
    // Without it, no organisation claims.
    const plain = await t.post('/api/auth/login/json', { email: owner.email, password: owner.password });
    expect(claimsOf(plain.body.data.access_token).org_id).toBeUndefined();
  });

  it('stays in the access token a re-authentication answers', async () => {
    const owner = await verifiedUser(t);
    const org = await createOrg(owner.access, { name: 'Reauth', slug: 'reauth' });
    const acting = await refresh(owner.refresh, org.id);
    const res = await t.post('/api/auth/reauthenticate', { password: owner.password }, { token: acting.body.data.access_token });
    expect(res.status).toBe(200);
    expect(claimsOf(res.body.data.access_token)).toMatchObject({ org_id: org.id, org_role: 'owner', org_permissions: ALL });
  });

  it('refuses a non-member at login (403) and opens no session', async () => {
    const [owner, outsider] = await Promise.all([verifiedUser(t), verifiedUser(t)]);
    const org = await createOrg(owner.access, { name: 'Closed', slug: 'closed' });
    const before = await t.db.selectFrom('sessions').select('id').where('user_id', '=', outsider.id).execute();
    const res = await t.post('/api/auth/login/json', { email: outsider.email, password: outsider.password, organization_id: org.id });
    expectError(res, 403, 'FORBIDDEN');
    expect(await t.db.selectFrom('sessions').select('id').where('user_id', '=', outsider.id).execute()).toEqual(before);
  });

  it('switches by refresh; asking for one the user is not in is 403 and leaves the refresh token working', async () => {
    const [owner, other] = await Promise.all([verifiedUser(t), verifiedUser(t)]);
    const first = await createOrg(owner.access, { name: 'First', slug: 'switch-first' });
    const second = await createOrg(other.access, { name: 'Second', slug: 'switch-second' });
    await addMember(t, second.id, owner.id, 'member');

    const toFirst = await refresh(owner.refresh, first.id);
    expect(toFirst.status).toBe(200);
    expect(claimsOf(toFirst.body.data.access_token)).toMatchObject({ org_id: first.id, org_role: 'owner' });
    const toSecond = await refresh(toFirst.body.data.refresh_token, second.id);
    expect(claimsOf(toSecond.body.data.access_token)).toMatchObject({
      org_id: second.id,
      org_role: 'member',
      org_permissions: ['org:read', 'members:read'],
    });

    const stranger = await createOrg(other.access, { name: 'Stranger', slug: 'switch-stranger' });
    expectError(await refresh(toSecond.body.data.refresh_token, stranger.id), 403, 'FORBIDDEN');
    const still = await refresh(toSecond.body.data.refresh_token);
    expect(still.status).toBe(200);
    expect(claimsOf(still.body.data.access_token).org_id).toBe(second.id);

    const none = await refresh(still.body.data.refresh_token, null);
    expect(claimsOf(none.body.data.access_token).org_id).toBeUndefined();
    expect(claimsOf((await refresh(none.body.data.refresh_token)).body.data.access_token).org_id).toBeUndefined();
  });

  it('is forgotten at the next refresh of a member removed: the session goes on without organisation claims', async () => {
    const [owner, member] = await Promise.all([verifiedUser(t), verifiedUser(t)]);
    const org = await createOrg(owner.access, { name: 'Removal', slug: 'removal' });
    await addMember(t, org.id, member.id, 'member');
    const acting = await refresh(member.refresh, org.id);
    expect(claimsOf(acting.body.data.access_token).org_id).toBe(org.id);
    const sessionId = claimsOf(acting.body.data.access_token).sid;

    expect((await t.delete(`/api/organizations/${org.id}/members/${member.id}`, { token: owner.access })).status).toBe(204);
    const after = await refresh(acting.body.data.refresh_token);
    expect(after.status).toBe(200);
    const claims = claimsOf(after.body.data.access_token);
    expect(claims.sid).toBe(sessionId);
    expect([claims.org_id, claims.org_role, claims.org_permissions]).toEqual([undefined, undefined, undefined]);
    expect(await t.db.selectFrom('sessions').select('organization_id').where('id', '=', sessionId).executeTakeFirst()).toEqual({
      organization_id: null,
    });
  });
});

describe('deletes', () => {
  it('leave no row behind: an organisation takes its memberships, a user theirs, and sessions forget it', async () => {
    const [owner, member] = await Promise.all([verifiedUser(t), verifiedUser(t)]);
    const org = await createOrg(owner.access, { name: 'Doomed', slug: 'doomed' });
    await addMember(t, org.id, member.id, 'member');
    const acting = await refresh(member.refresh, org.id);
    const sessionId = claimsOf(acting.body.data.access_token).sid;

    expectError(await t.delete(`/api/organizations/${org.id}`, { token: member.access }), 403, 'FORBIDDEN');
    expect((await t.delete(`/api/organizations/${org.id}`, { token: owner.access })).status).toBe(204);
    expect(await members().selectFrom('organization_members').selectAll().where('organization_id', '=', org.id).execute()).toEqual([]);
    expect(await t.db.selectFrom('sessions').select('organization_id').where('id', '=', sessionId).executeTakeFirst()).toEqual({
      organization_id: null,
    });
    expectError(await t.get(`/api/organizations/${org.id}`, { token: admin }), 404, 'NOT_FOUND');

    const kept = await createOrg(owner.access, { name: 'Kept', slug: 'kept' });
    await addMember(t, kept.id, member.id, 'member');
    await t.db.deleteFrom('users').where('id', '=', member.id).execute();
    expect(await members().selectFrom('organization_members').select('user_id').where('organization_id', '=', kept.id).execute()).toEqual([
      { user_id: owner.id },
    ]);
  });
});

describe('audit and webhooks', () => {
  it('records and sends every change, each as the contract documents it', async () => {
    const [owner, member] = await Promise.all([verifiedUser(t), verifiedUser(t)]);
    const org = await createOrg(owner.access, { name: 'Evented', slug: 'evented' });
    await t.put(`/api/organizations/${org.id}`, { name: 'Evented Inc' }, { token: owner.access });
    await addMember(t, org.id, member.id, 'member');
    await t.put(`/api/organizations/${org.id}/members/${member.id}`, { role: 'admin' }, { token: owner.access });
    await t.delete(`/api/organizations/${org.id}/members/${member.id}`, { token: member.access });
    await t.delete(`/api/organizations/${org.id}`, { token: owner.access });

    const types = [
      'organization.created',
      'organization.member_added',
      'organization.updated',
      'organization.role_changed',
      'organization.member_removed',
      'organization.deleted',
    ];
    const ofOrg = () => hooks.received.filter((r) => r.payload.data.organization?.id === org.id);
    await until(() => ofOrg().length === types.length, 'the organisation’s webhooks');
    expect(ofOrg().map((r) => r.payload.type)).toEqual(types);
    for (const r of ofOrg()) {
      expect(r.verifiedBy.length).toBeGreaterThan(0);
      assertWebhookMatchesContract(r.payload.type, r.payload);
    }
    const changed = ofOrg().find((r) => r.payload.type === 'organization.role_changed')!;
    expect(changed.payload.data).toEqual({
      organization: { id: org.id, slug: 'evented', name: 'Evented Inc' },
      member: { user: { id: member.id, email: member.email, name: member.name }, role: 'admin', previous_role: 'member' },
    });

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
      { event_type: 'organization.updated', actor_user_id: owner.id, subject_user_id: null },
      { event_type: 'organization.role_changed', actor_user_id: owner.id, subject_user_id: member.id },
      { event_type: 'organization.member_removed', actor_user_id: member.id, subject_user_id: member.id },
      { event_type: 'organization.deleted', actor_user_id: owner.id, subject_user_id: null },
    ]);
  });
});

describe('the command line', () => {
  it('creates an organisation for its owner and adds members, as the API would show them', async () => {
    const c = await startTestApp();
    const owner = await c.register();
    const member = await c.register();
    // The embedded database serves one process: the operator stops the server first.
    await c.stop();
    try {
      expect(await cli(c, ['organizations', 'create', '--name', 'Ops Made', '--slug', 'ops-made', '--owner-email', owner.email])).toEqual({
        code: 0,
        stdout: expect.stringMatching(
          new RegExp(`^created organization \\d+ \\(ops-made\\) owned by user ${owner.id} \\(${owner.email}\\)\n$`),
        ),
        stderr: '',
      });
      expect(await cli(c, ['organizations', 'add-member', '--slug', 'ops-made', '--email', member.email, '--role', 'admin'])).toEqual({
        code: 0,
        stdout: `added user ${member.id} (${member.email}) to ops-made as admin\n`,
        stderr: '',
      });
      expect(await cli(c, ['organizations', 'add-member', '--slug', 'ops-made', '--email', owner.email, '--role', 'member'])).toEqual({
        code: 1,
        stdout: '',
        stderr: expect.stringContaining('The last owner of an organization cannot be demoted'),
      });
      expect(
        (await cli(c, ['organizations', 'create', '--name', 'Again', '--slug', 'ops-made', '--owner-email', owner.email])).stderr,
      ).toBe('error: An organization with this slug already exists\n');
      expect((await cli(c, ['organizations', 'add-member', '--slug', 'nowhere', '--email', member.email, '--role', 'admin'])).code).toBe(1);
      expect((await cli(c, ['organizations', 'create', '--name', 'X', '--slug', '42', '--owner-email', owner.email])).code).toBe(2);
      expect((await cli(c, ['organizations', 'add-member', '--slug', 'ops-made', '--email', member.email])).code).toBe(2);
    } finally {
      const again = await startTestApp({}, { sameDatabaseAs: c });
      try {
        const mine = await again.post('/api/auth/login/json', { email: member.email, password: member.password });
        const orgs = await again.get('/api/auth/organizations', { token: mine.body.data.access_token });
        expect(orgs.body.data.map((m: { organization: { slug: string }; role: string }) => [m.organization.slug, m.role])).toEqual([
          ['ops-made', 'admin'],
        ]);
        const audit = await auditTable(again)
          .selectFrom('audit_events')
          .select(['event_type', 'actor_user_id', 'subject_user_id'])
          .where('event_type', 'like', 'organization.%')
          .orderBy('id')
          .execute();
        expect(audit).toEqual([
          { event_type: 'organization.created', actor_user_id: null, subject_user_id: null },
          { event_type: 'organization.member_added', actor_user_id: null, subject_user_id: owner.id },
          { event_type: 'organization.member_added', actor_user_id: null, subject_user_id: member.id },
        ]);
      } finally {
        await again.stop();
        await c.database.drop();
      }
    }
  });
});
