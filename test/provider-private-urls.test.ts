import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../src/config/index.js';
import { findProvider, insertProvider, listProviders, type ProviderSettings } from '../src/providers/provider-repository.js';
import { OIDC_CLAIMS } from '../src/providers/presets.js';
import { startTestApp, TEST_SECRET, type TestContext } from './support/app.js';
import { expectError } from './support/expect.js';

// In production the service fetches a provider's URLs on public addresses only, as it does a
// webhook's: the URLs are refused when saved, and each request is checked again on the address it
// connects to, so a name that resolves to loopback reaches nothing.

const PRODUCTION = { NODE_ENV: 'production', SECRET_KEY: TEST_SECRET, MAIL_LOG_LINKS: 'true', AUTH_REDIRECT_URLS: 'http://app.test/*' };
const SETTING = '; PROVIDER_ALLOW_PRIVATE_URLS=true allows internal addresses';
/** A public address, written as such so that saving it needs no DNS. */
const PUBLIC = 'https://93.184.216.34';

let t: TestContext;
let admin: string;
/** A server inside the network, which the attacker would have the service call. */
let receiver: Server;
let port: number;
const received: string[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    received.push(`${req.method} ${req.url}`);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  port = (receiver.address() as AddressInfo).port;
  t = await startTestApp(PRODUCTION);
  admin = await t.adminToken();
});
afterAll(async () => {
  await t?.close();
  receiver?.close();
});

const oauth2 = (overrides: Record<string, string>) => ({
  slug: `corp-${randomBytes(3).toString('hex')}`,
  kind: 'oauth2',
  client_id: 'client',
  authorization_url: `${PUBLIC}/authorize`,
  token_url: `${PUBLIC}/token`,
  userinfo_url: `${PUBLIC}/user`,
  ...overrides,
});

/** A provider as a row, as if its names had resolved to public addresses when it was saved. */
async function savedEarlier(settings: Partial<ProviderSettings>): Promise<string> {
  const slug = `earlier-${randomBytes(3).toString('hex')}`;
  await insertProvider(t.db, {
    slug,
    kind: 'oauth2',
    name: slug,
    client_id: 'client',
    client_secret_sealed: null,
    issuer: null,
    authorization_url: `${PUBLIC}/authorize`,
    token_url: `${PUBLIC}/token`,
    userinfo_url: `${PUBLIC}/user`,
    emails_url: null,
    scopes: [],
    claims: OIDC_CLAIMS,
    enabled: true,
    allow_signup: true,
    trust_email: false,
    ...settings,
  });
  return slug;
}

function authorize(slug: string) {
  const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
  const query = new URLSearchParams({ redirect_to: 'http://app.test/done', code_challenge: challenge, code_challenge_method: 'S256' });
  return t.get(`/api/auth/providers/${slug}/authorize?${query.toString()}`, { headers: { host: 'accounts.test' } });
}

describe('PROVIDER_ALLOW_PRIVATE_URLS', () => {
  it('is false in production and true elsewhere, unless set', () => {
    expect(loadConfig({}).providers.allowPrivateUrls).toBe(true);
    expect(loadConfig({ ...PRODUCTION }).providers.allowPrivateUrls).toBe(false);
    expect(loadConfig({ ...PRODUCTION, PROVIDER_ALLOW_PRIVATE_URLS: 'true' }).providers.allowPrivateUrls).toBe(true);
    expect(loadConfig({ PROVIDER_ALLOW_PRIVATE_URLS: 'false' }).providers.allowPrivateUrls).toBe(false);
  });
});

describe('saving a provider in production', () => {
  it('refuses a user-info or token URL on the loopback address with 422 naming the field and the setting, and saves nothing', async () => {
    const before = await listProviders(t.db);
    const userinfo = await t.post('/api/identity-providers', oauth2({ userinfo_url: `http://127.0.0.1:${port}/user` }), { token: admin });
    expectError(userinfo, 422, 'VALIDATION_ERROR');
    expect(userinfo.body.error.details).toEqual([{ field: 'body.userinfo_url', message: `must be an https:// URL${SETTING}` }]);

    const token = await t.post('/api/identity-providers', oauth2({ token_url: `https://127.0.0.1:${port}/token` }), { token: admin });
    expectError(token, 422, 'VALIDATION_ERROR');
    expect(token.body.error.details).toEqual([
      {
        field: 'body.token_url',
        message: `points to 127.0.0.1, which is not a public address (loopback, private, link-local and other internal addresses are refused)${SETTING}`,
      },
    ]);

    // A name that resolves to loopback, and the other kinds of internal address, are refused alike.
    const named = await t.post('/api/identity-providers', oauth2({ emails_url: `https://localhost:${port}/emails` }), { token: admin });
    expectError(named, 422, 'VALIDATION_ERROR');
    expect(named.body.error.details).toEqual([
      {
        field: 'body.emails_url',
        message: expect.stringMatching(new RegExp(`^localhost resolves to .*, which is not a public address${SETTING}$`)),
      },
    ]);
    for (const issuer of [
      'https://10.0.0.8/realm',
      'https://169.254.169.254/latest',
      'https://[::1]/realm',
      'https://[::ffff:127.0.0.1]/x',
    ]) {
      const res = await t.post('/api/identity-providers', { slug: 'inside', client_id: 'c', issuer }, { token: admin });
      expectError(res, 422, 'VALIDATION_ERROR');
      expect(res.body.error.details).toEqual([{ field: 'body.issuer', message: expect.stringContaining(SETTING) }]);
    }
    expect(await listProviders(t.db)).toEqual(before);
    expect(received).toEqual([]);
  });

  it('refuses a change that points a saved provider inside the network, and leaves it as it was', async () => {
    const created = await t.post('/api/identity-providers', oauth2({}), { token: admin });
    expect(created.status).toBe(201);
    const slug = created.body.data.slug as string;
    const before = await findProvider(t.db, slug);
    const res = await t.put(`/api/identity-providers/${slug}`, { userinfo_url: `http://127.0.0.1:${port}/user` }, { token: admin });
    expectError(res, 422, 'VALIDATION_ERROR');
    expect(res.body.error.details).toEqual([{ field: 'body.userinfo_url', message: `must be an https:// URL${SETTING}` }]);
    expect(await findProvider(t.db, slug)).toEqual(before);
  });
});

describe('fetching from a provider in production', () => {
  it('does not read the discovery document of an issuer whose name resolves to loopback', async () => {
    const slug = await savedEarlier({
      kind: 'oidc',
      issuer: `http://localhost:${port}`,
      authorization_url: null,
      token_url: null,
      userinfo_url: null,
    });
    const res = await authorize(slug);
    expect(res.status).toBe(302);
    const back = new URL(res.headers.location);
    expect(back.origin + back.pathname).toBe('http://app.test/done');
    expect(back.searchParams.get('error')).toBe('temporarily_unavailable');
    expect(received).toEqual([]);
  });

  it('does not call a token endpoint whose name resolves to loopback, and signs nobody in', async () => {
    const slug = await savedEarlier({ token_url: `http://localhost:${port}/token`, userinfo_url: `http://localhost:${port}/user` });
    const start = await authorize(slug);
    expect(start.status).toBe(302);
    const state = new URL(start.headers.location).searchParams.get('state')!;
    const res = await t.get(`/api/auth/providers/${slug}/callback?code=from-the-provider&state=${state}`, {
      headers: { host: 'accounts.test' },
    });
    expect(res.status).toBe(302);
    const back = new URL(res.headers.location);
    expect(back.searchParams.get('error')).toBe('invalid_response');
    expect(back.searchParams.get('code')).toBeNull();
    expect(received).toEqual([]);
  });
});
