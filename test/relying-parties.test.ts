import { generateKeyPairSync } from 'node:crypto';
import { startTestApp, type RegisteredUser, type TestContext } from './support/app.js';
import { FormBrowser, formTo, signIn } from './support/hosted-pages.js';
import { freePort } from './support/net.js';
import {
  authorizationRequest,
  REDIRECT,
  relyingParty,
  relyingPartyLibraries,
  type Jose,
  type OpenIdClient,
} from './support/relying-party.js';

// What relying-party libraries set up as their guides say expect of the provider, with openid-client
// as the application and jose checking the signatures: the person's claims in the ID token, a
// refresh token for offline_access, and RS256 ID tokens even where the service signs its own tokens
// with ES256 (ALGORITHM=ES256 here).

let t: TestContext;
let oidc: OpenIdClient;
let jose: Jose;
let admin: string;

beforeAll(async () => {
  ({ oidc, jose } = await relyingPartyLibraries());
  const port = await freePort();
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  t = await startTestApp(
    {
      APP_URL: `http://127.0.0.1:${port}`,
      ALGORITHM: 'ES256',
      JWT_PRIVATE_KEY: ec.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      OIDC_REGISTRATION: 'open',
    },
    { port },
  );
  admin = await t.adminToken();
});
afterAll(() => t?.close());

async function adminClient(body: Record<string, unknown>): Promise<{ id: string; secret?: string }> {
  const res = await t.post('/api/oauth/clients', { type: 'confidential', redirect_uris: [REDIRECT], ...body }, { token: admin });
  expect(res.status).toBe(201);
  return { id: res.body.data.client_id, secret: res.body.data.client_secret };
}

/**
 * A code flow of `config` in a fresh browser: the person signs in, allows the application when they
 * are asked, and the application exchanges the code.
 */
async function codeFlow(config: Awaited<ReturnType<typeof relyingParty>>, who: RegisteredUser, params: Record<string, string>) {
  const { url, exchange } = await authorizationRequest(oidc, config, params);
  const browser = new FormBrowser(t.baseUrl);
  let page = await signIn(browser, url.href, who.email, who.password);
  const asked = page.status === 200;
  if (asked) page = await browser.submit(formTo(page, '/consent'), { decision: 'allow' });
  return { tokens: await exchange(page), asked };
}

describe('ID tokens', () => {
  it('carry the claims of the scopes granted, as userinfo does: e-mail address and name', async () => {
    const app = await adminClient({ name: 'Wiki', first_party: true });
    const who = await t.register({ name: 'Mary Jackson' });
    const { tokens } = await codeFlow(await relyingParty(oidc, t, app), who, { scope: 'openid profile email' });
    expect(tokens.claims()).toMatchObject({
      sub: String(who.id),
      email: who.email,
      email_verified: false,
      name: 'Mary Jackson',
      updated_at: expect.any(Number),
    });

    // Only the scopes granted: without `email` and `profile`, neither the address nor the name.
    const { tokens: bare } = await codeFlow(await relyingParty(oidc, t, app), who, { scope: 'openid' });
    expect(bare.claims()).not.toHaveProperty('email');
    expect(bare.claims()).not.toHaveProperty('name');
  });

  it('are signed with RS256 for a client that names no algorithm, beside an ES256 signing key, and with ES256 for one that asks', async () => {
    const discovery = (await (await fetch(`${t.baseUrl}/.well-known/openid-configuration`)).json()) as Record<string, string[]>;
    expect(discovery.id_token_signing_alg_values_supported).toEqual(['RS256', 'ES256']);

    const app = await adminClient({ name: 'Reports', first_party: true });
    const who = await t.register();
    const { tokens } = await codeFlow(await relyingParty(oidc, t, app), who, { scope: 'openid' });
    const jwks = jose.createRemoteJWKSet(new URL(`${t.baseUrl}/.well-known/jwks.json`));
    const verified = await jose.jwtVerify(tokens.id_token!, jwks, { algorithms: ['RS256'], issuer: t.baseUrl, audience: app.id });
    expect(verified.protectedHeader.alg).toBe('RS256');
    expect(verified.payload.sub).toBe(String(who.id));

    // The JWK Set publishes both; the RSA key is kept in the database, sealed, for the next start.
    const published = (await (await fetch(`${t.baseUrl}/.well-known/jwks.json`)).json()) as { keys: Array<{ alg: string; kid: string }> };
    expect(published.keys.map((key) => key.alg).sort()).toEqual(['ES256', 'RS256']);
    const kept = await t.db
      .withTables<{ oidc_keys: { algorithm: string; private_key_sealed: string } }>()
      .selectFrom('oidc_keys')
      .selectAll()
      .execute();
    expect(kept.map((row) => row.algorithm)).toEqual(['RS256']);
    expect(kept[0].private_key_sealed).not.toContain('PRIVATE KEY');

    // A client that registers for ES256 gets ES256.
    const registered = await fetch(`${t.baseUrl}/oauth2/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Edge', redirect_uris: [REDIRECT], id_token_signed_response_alg: 'ES256' }),
    });
    expect(registered.status).toBe(201);
    const edge = (await registered.json()) as { client_id: string; client_secret: string };
    const config = await oidc.discovery(
      new URL(t.baseUrl),
      edge.client_id,
      { client_secret: edge.client_secret, id_token_signed_response_alg: 'ES256' },
      undefined,
      { execute: [oidc.allowInsecureRequests] },
    );
    const { tokens: signedEs } = await codeFlow(config, who, { scope: 'openid' });
    expect(jose.decodeProtectedHeader(signedEs.id_token!).alg).toBe('ES256');
    await expect(jose.jwtVerify(signedEs.id_token!, jwks, { algorithms: ['ES256'], audience: edge.client_id })).resolves.toBeDefined();
  });
});

describe('refresh tokens for offline_access', () => {
  it('are given to a first-party client that asks without prompt=consent, as it is never asked for consent', async () => {
    const app = await adminClient({ name: 'Own app', first_party: true });
    const config = await relyingParty(oidc, t, app);
    const { tokens, asked } = await codeFlow(config, await t.register(), { scope: 'openid offline_access' });
    expect(asked).toBe(false);
    expect(tokens.refresh_token).toEqual(expect.any(String));
    expect(tokens.scope?.split(' ')).toContain('offline_access');
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).toEqual(expect.any(String));
  });

  it('are given to a third-party client only when it asks with prompt=consent, and the person allows it', async () => {
    const app = await adminClient({ name: 'Partner' });
    const config = await relyingParty(oidc, t, app);
    const who = await t.register();
    const without = await codeFlow(config, who, { scope: 'openid offline_access' });
    expect(without.tokens.refresh_token).toBeUndefined();
    const asked = await codeFlow(config, who, { scope: 'openid offline_access', prompt: 'consent' });
    expect(asked.asked).toBe(true);
    expect(asked.tokens.refresh_token).toEqual(expect.any(String));
  });
});
