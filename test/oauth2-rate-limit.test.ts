import { startTestApp, type Response, type TestContext } from './support/app.js';
import { seedOauthClient } from './support/oauth-clients.js';

// The OpenID Connect provider's endpoints behind the API's per-address limits: registration and the
// token endpoint on AUTH_RATE_LIMIT_PER_MINUTE (its default, 20), discovery on RATE_LIMIT_PER_MINUTE;
// a refusal in OAuth's shape, or as a page for a browser's request.

const AUTH_LIMIT = 20;
const GENERAL_LIMIT = 600;

let t: TestContext;
let nextAddress = 1;
/** An address of the test's own (the app trusts the proxy's X-Forwarded-For), so that budgets never mix. */
const freshIp = () => `10.9.${(nextAddress >> 8) & 255}.${nextAddress++ & 255}`;
const from = (ip: string, headers: Record<string, string> = {}) => ({ headers: { 'X-Forwarded-For': ip, ...headers } });

beforeAll(async () => {
  t = await startTestApp({ RATE_LIMIT_ENABLED: 'true', TRUST_PROXY: 'true', OIDC_REGISTRATION: 'open' });
});
afterAll(() => t.close());

function expectOauthLimited(res: Response, limit: number): void {
  expect(res.status).toBe(429);
  expect(res.body).toEqual({ error: 'temporarily_unavailable', error_description: expect.stringContaining('AUTH_RATE_LIMIT_PER_MINUTE') });
  expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  expect(res.headers['ratelimit-limit']).toBe(String(limit));
  expect(res.headers['ratelimit-remaining']).toBe('0');
}

it('refuses the 21st of 41 registrations from one address within the minute, and keeps 20 clients', async () => {
  const ip = freshIp();
  const name = `Burst ${ip}`;
  const answers = await Promise.all(
    Array.from({ length: 41 }, () =>
      t.post(
        '/oauth2/register',
        { client_name: name, redirect_uris: ['https://burst.example.com/cb'], token_endpoint_auth_method: 'none' },
        from(ip),
      ),
    ),
  );
  expect(answers.filter((res) => res.status === 201)).toHaveLength(AUTH_LIMIT);
  const refused = answers.filter((res) => res.status !== 201);
  expect(refused).toHaveLength(41 - AUTH_LIMIT);
  for (const res of refused) expectOauthLimited(res, AUTH_LIMIT);
  const kept = await t.db
    .withTables<{ oauth_clients: { client_id: string; name: string } }>()
    .selectFrom('oauth_clients')
    .select('client_id')
    .where('name', '=', name)
    .execute();
  expect(kept).toHaveLength(AUTH_LIMIT);
});

it('stops guessing a client secret at the token endpoint after the auth limit, the right secret included', async () => {
  const client = await seedOauthClient(t, { name: 'Batch', type: 'confidential', redirect_uris: ['https://batch.example.com/cb'] });
  const tokenRequest = (secret: string, ip: string) =>
    t.post(
      '/oauth2/token',
      { grant_type: 'client_credentials' },
      { form: true, ...from(ip, { Authorization: `Basic ${Buffer.from(`${client.id}:${secret}`).toString('base64')}` }) },
    );
  const ip = freshIp();
  for (let i = 1; i <= 30; i++) {
    const res = await tokenRequest(`wrong-${i}`, ip);
    if (i <= AUTH_LIMIT) {
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ error: 'invalid_client' });
      expect(res.headers['ratelimit-remaining']).toBe(String(AUTH_LIMIT - i));
    } else expectOauthLimited(res, AUTH_LIMIT);
  }
  expectOauthLimited(await tokenRequest(client.secret!, ip), AUTH_LIMIT);
  // Another address still reaches the provider, which takes the secret and refuses a grant the client does not have.
  const elsewhere = await tokenRequest(client.secret!, freshIp());
  expect(elsewhere.status).toBe(400);
  expect(elsewhere.body).toMatchObject({
    error: 'unauthorized_client',
    error_description: 'requested grant type is not allowed for this client',
  });
});

it('answers a browser’s authorization request past the limit with the error page', async () => {
  const ip = freshIp();
  for (let i = 0; i < AUTH_LIMIT; i++) expect((await t.get('/oauth2/authorize?client_id=nobody', from(ip))).status).toBe(400);
  const res = await fetch(`${t.baseUrl}/oauth2/authorize?client_id=nobody`, { headers: { 'X-Forwarded-For': ip } });
  expect(res.status).toBe(429);
  expect(res.headers.get('content-type')).toMatch(/^text\/html/);
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(await res.text()).toContain('<code>temporarily_unavailable</code>');
});

it('counts discovery on the general budget', async () => {
  const res = await t.get('/.well-known/openid-configuration', from(freshIp()));
  expect(res.status).toBe(200);
  expect(res.headers['ratelimit-limit']).toBe(String(GENERAL_LIMIT));
  expect(res.headers['ratelimit-remaining']).toBe(String(GENERAL_LIMIT - 1));
});
