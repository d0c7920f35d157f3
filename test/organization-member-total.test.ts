import { sql } from 'kysely';
import type { OrganizationMemberTable } from '../src/organizations/organization-repository.js';
import { startTestApp, type TestContext } from './support/app.js';
import { verifiedUser } from './support/organizations.js';

let t: TestContext;
let admin: string;

beforeAll(async () => {
  t = await startTestApp();
  admin = await t.adminToken();
});
afterAll(async () => {
  await t?.close();
});

const members = () => t.db.withTables<{ organization_members: OrganizationMemberTable }>();

/** The members list's `meta.total` and the ids on its first page, beside a count(*) of the live members. */
async function totals(orgId: number): Promise<{ total: number; listed: number[]; counted: number }> {
  const res = await t.get(`/api/organizations/${orgId}/members?per_page=100`, { token: admin });
  expect(res.status).toBe(200);
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from organization_members m join users u on u.id = m.user_id
    where m.organization_id = ${orgId} and u.deleted_at is null`.execute(t.db);
  return { total: res.body.meta.total, listed: res.body.data.map((m: { user: { id: number } }) => m.user.id), counted: rows[0].n };
}

describe("an organisation's member total", () => {
  it('follows memberships added and removed, and accounts deleted, restored and removed', async () => {
    const owner = await verifiedUser(t);
    const res = await t.post('/api/organizations', { name: 'Counted', slug: 'counted' }, { token: owner.access });
    expect(res.status).toBe(201);
    const org = res.body.data.id as number;
    const [a, b, c] = await Promise.all([verifiedUser(t), verifiedUser(t), verifiedUser(t)]);
    // Joined in this order, a second apart: the page is by when members joined.
    for (const [i, user] of [a, b, c].entries()) {
      await members()
        .insertInto('organization_members')
        .values({ organization_id: org, user_id: user.id, role: 'member', joined_at: new Date(Date.now() + (i + 1) * 1000) })
        .execute();
    }
    expect(await totals(org)).toEqual({ total: 4, listed: [owner.id, a.id, b.id, c.id], counted: 4 });

    expect((await t.delete(`/api/users/${a.id}`, { token: admin })).status).toBe(204);
    expect(await totals(org)).toEqual({ total: 3, listed: [owner.id, b.id, c.id], counted: 3 });

    expect((await t.post(`/api/users/${a.id}/restore`, {}, { token: admin })).status).toBe(200);
    expect(await totals(org)).toEqual({ total: 4, listed: [owner.id, a.id, b.id, c.id], counted: 4 });

    expect((await t.delete(`/api/organizations/${org}/members/${b.id}`, { token: owner.access })).status).toBe(204);
    expect(await totals(org)).toEqual({ total: 3, listed: [owner.id, a.id, c.id], counted: 3 });

    // An account removed from the table takes its memberships with it, counted or not.
    await t.db.deleteFrom('users').where('id', '=', c.id).execute();
    expect(await totals(org)).toEqual({ total: 2, listed: [owner.id, a.id], counted: 2 });
    expect((await t.delete(`/api/users/${a.id}`, { token: admin })).status).toBe(204);
    await t.db.deleteFrom('users').where('id', '=', a.id).execute();
    expect(await totals(org)).toEqual({ total: 1, listed: [owner.id], counted: 1 });
  });

  it('goes with its organisation', async () => {
    const owner = await verifiedUser(t);
    const res = await t.post('/api/organizations', { name: 'Fleeting', slug: 'fleeting' }, { token: owner.access });
    const org = res.body.data.id as number;
    expect((await totals(org)).total).toBe(1);
    expect((await t.delete(`/api/organizations/${org}`, { token: owner.access })).status).toBe(204);
    const { rows } = await sql<{
      n: number;
    }>`select count(*)::int as n from organization_member_counts where organization_id = ${org}`.execute(t.db);
    expect(rows[0].n).toBe(0);
  });
});
