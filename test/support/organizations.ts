import type { OrganizationMemberTable } from '../../src/organizations/organization-repository.js';
import type { RegisteredUser, TestContext } from './app.js';
import type { WebhookReceiver } from './webhook-receiver.js';

// Set-up shared by the organisation tests.

/** A registered user whose address is verified, as creating an organisation and accepting an invitation ask. */
export async function verifiedUser(t: TestContext, email?: string): Promise<RegisteredUser> {
  const user = await t.register(email === undefined ? {} : { email });
  await t.db.updateTable('users').set({ email_verified: true }).where('id', '=', user.id).execute();
  return user;
}

// Members join in the order they are added: two additions within one millisecond still get
// distinct times, so that lists in join order are what the tests expect.
let lastJoin = 0;

/** Puts the user in the organisation with the role, as an operator would with the command line. */
export async function addMember(t: TestContext, orgId: number, userId: number, role: string): Promise<void> {
  lastJoin = Math.max(Date.now(), lastJoin + 1);
  await t.db
    .withTables<{ organization_members: OrganizationMemberTable }>()
    .insertInto('organization_members')
    .values({ organization_id: orgId, user_id: userId, role, joined_at: new Date(lastJoin) })
    .execute();
}

/** Subscribes `hooks` to `events` as the deployment's admin, and trusts the secret the subscription answers. */
export async function subscribe(t: TestContext, hooks: WebhookReceiver, events: string[]): Promise<void> {
  const res = await t.post('/api/webhooks', { url: hooks.url, events }, { token: await t.adminToken() });
  if (res.status !== 201) throw new Error(`the subscription answered ${res.status}: ${JSON.stringify(res.body)}`);
  hooks.trust(res.body.data.secret);
}
