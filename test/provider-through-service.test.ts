import { createHash, randomBytes } from 'node:crypto';
import type { UserIdentityTable } from '../src/providers/identity-repository.js';
import { startTestApp, type TestContext } from './support/app.js';
import { FormBrowser, formTo } from './support/hosted-pages.js';
import { freePort } from './support/net.js';
import { seedOauthClient } from './support/oauth-clients.js';

// End to end: a person signs in to one instance of this service ("accounts") with their account at
// another instance ("team"), which is their OpenID provider: its discovery, hosted sign-in page,
// ID tokens signed with its key and published in its JWKS, and user-info. Neither side is mocked;
// the browser is a cookie jar and the pages' own forms.

const APP = 'http://app.test/signed-in';
/** The origin the browser reaches "accounts" at: the callback "team" sends people back to. */
const HOST = { host: 'accounts.test' };
const CALLBACK = 'http://accounts.test/api/auth/providers/team/callback';

let team: TestContext;
let accounts: TestContext;
let teamOrigin: string;

const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

beforeAll(async () => {
  // The provider's issuer is its APP_URL: it listens where APP_URL says.
  const port = await freePort();
  teamOrigin = `http://127.0.0.1:${port}`;
  [team, accounts] = await Promise.all([
    startTestApp({ APP_URL: teamOrigin }, { port }),
    startTestApp({ AUTH_REDIRECT_URLS: 'http://app.test/*' }),
  ]);
  // The service authenticates to a provider as its discovery lists first: client_secret_basic here.
  const client = await seedOauthClient(team, {
    name: 'Accounts',
    type: 'confidential',
    redirect_uris: [CALLBACK],
    scopes: ['openid', 'profile', 'email'],
    first_party: true,
  });
  const admin = await accounts.adminToken();
  const made = await accounts.post(
    '/api/identity-providers',
    { slug: 'team', name: 'Team', client_id: client.id, client_secret: client.secret, issuer: teamOrigin },
    { token: admin },
  );
  expect(made.status).toBe(201);
});
afterAll(async () => {
  await Promise.all([accounts?.close(), team?.close()]);
});

/** The application's start at "accounts", the person's sign-in at "team"'s page, and the way back. */
async function signInThroughTeam(email: string, password: string): Promise<{ landed: URL; verifier: string }> {
  const verifier = randomBytes(32).toString('base64url');
  const query = new URLSearchParams({ redirect_to: APP, code_challenge: s256(verifier), code_challenge_method: 'S256' });
  const start = await accounts.get(`/api/auth/providers/team/authorize?${query.toString()}`, { headers: HOST });
  expect(start.status).toBe(302);
  expect(start.headers.location.startsWith(`${teamOrigin}/oauth2/`)).toBe(true);
  const browser = new FormBrowser(teamOrigin);
  const page = await browser.open(start.headers.location);
  expect(page.status).toBe(200);
  const left = await browser.submit(formTo(page, '/login'), { email, password });
  // Gone from "team" (status 0): to the callback of "accounts", with the code, the state and team's issuer.
  expect(left.status).toBe(0);
  const callback = new URL(left.url);
  expect(callback.origin + callback.pathname).toBe(CALLBACK);
  expect(callback.searchParams.get('iss')).toBe(teamOrigin);
  const back = await accounts.get(callback.pathname + callback.search, { headers: HOST });
  expect(back.status).toBe(302);
  return { landed: new URL(back.headers.location), verifier };
}

it('signs a person up at one instance with their account at another, then signs them in again to the same account', async () => {
  const person = await team.register({ name: 'Katherine Johnson' });
  await team.db.updateTable('users').set({ email_verified: true }).where('id', '=', person.id).execute();

  const first = await signInThroughTeam(person.email, person.password);
  expect([...first.landed.searchParams.keys()]).toEqual(['code']);
  const res = await accounts.post('/api/auth/providers/token', {
    code: first.landed.searchParams.get('code'),
    code_verifier: first.verifier,
  });
  expect(res.status).toBe(200);
  const user = res.body.data.user;
  expect(user).toMatchObject({ email: person.email, name: 'Katherine Johnson', email_verified: true });
  const identities = await accounts.db
    .withTables<{ user_identities: UserIdentityTable }>()
    .selectFrom('user_identities')
    .selectAll()
    .where('user_id', '=', user.id)
    .execute();
  // The subject is the user's id at "team", as its ID tokens say it.
  expect(identities.map((identity) => identity.subject)).toEqual([String(person.id)]);

  const again = await signInThroughTeam(person.email, person.password);
  const second = await accounts.post('/api/auth/providers/token', {
    code: again.landed.searchParams.get('code'),
    code_verifier: again.verifier,
  });
  expect(second.status).toBe(200);
  expect(second.body.data.user.id).toBe(user.id);
});
