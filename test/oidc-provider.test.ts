import type { Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import Router from '@koa/router';
import jwt from 'jsonwebtoken';
import { startTestApp, type TestContext } from './support/app';
import { freePort } from './support/net';

// The service as an OpenID Connect provider, with openid-client (a certified relying party) as the
// application. Until the hosted pages exist, the person's side of an interaction is answered by a
// stand-in route over the interactions the pages use, reached over real HTTP like everything else.

// eslint-disable-next-line @typescript-eslint/no-implied-eval -- a real import() of an ES module
const importModule = new Function('specifier', `return import(specifier); // ${randomUUID()}`) as (specifier: string) => Promise<any>;

const REDIRECT = 'http://127.0.0.1:9/callback';
const SECRET = 'a-client-secret-that-is-long-enough';

let t: TestContext;
let base: string;
let server: Server;
let oidc: any;

beforeAll(async () => {
  const port = await freePort();
  t = await startTestApp({ APP_URL: `http://127.0.0.1:${port}` });
  base = `http://127.0.0.1:${port}`;
  const router = new Router();
  const interactions = () => t.app.oidc!.interactions;
  router.get('/oauth2/interaction/:uid', async (ctx) => {
    ctx.body = await interactions().details(ctx);
  });
  router.post('/oauth2/interaction/:uid/login', async (ctx) => {
    const q = ctx.query as Record<string, string>;
    await interactions().finishLogin(ctx, { userId: q.user, sessionId: q.session, amr: ['pwd'] });
  });
  router.post('/oauth2/interaction/:uid/consent', async (ctx) => {
    await interactions().finishConsent(ctx, ['openid', 'profile', 'email', 'offline_access']);
  });
  t.app.koa.middleware.unshift(router.routes() as any);
  server = t.app.koa.listen(port, '127.0.0.1');
  oidc = await importModule('openid-client');
  await t.db
    .withTables<{ oauth_clients: any }>()
    .insertInto('oauth_clients')
    .values({
      client_id: 'app1',
      name: 'App One',
      type: 'confidential',
      client_secret_sealed: null,
      metadata: JSON.stringify({
        redirect_uris: [REDIRECT],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        client_secret: SECRET,
      }),
    })
    .execute();
});
afterAll(async () => {
  server?.close();
  server?.closeAllConnections();
  await t?.close();
});

/** A browser's cookies, and redirects followed by hand. */
class Browser {
  cookies = new Map<string, string>();
  async go(url: string, init: RequestInit = {}): Promise<Response> {
    const res = await fetch(new URL(url, base), {
      ...init,
      redirect: 'manual',
      headers: { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
    });
    for (const line of res.headers.getSetCookie()) {
      const [name, value] = line.split(';')[0].split('=');
      this.cookies.set(name, value);
    }
    return res;
  }
}

describe('discovery', () => {
  it('serves the metadata at /.well-known/openid-configuration, endpoints under /oauth2/ and the JWKS of the service', async () => {
    const res = await fetch(`${base}/.well-known/openid-configuration`);
    expect(res.status).toBe(200);
    const metadata = await res.json();
    expect(metadata).toMatchObject({
      issuer: base,
      authorization_endpoint: `${base}/oauth2/authorize`,
      token_endpoint: `${base}/oauth2/token`,
      userinfo_endpoint: `${base}/oauth2/userinfo`,
      jwks_uri: `${base}/.well-known/jwks.json`,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
    });
  });
});

describe('the authorization code flow', () => {
  it('signs a person in and gives the application an ID token, tokens and the user info', async () => {
    const user = await t.register();
    const sid = (jwt.decode(user.access) as { sid: string }).sid;
    const config = await oidc.discovery(new URL(base), 'app1', SECRET, undefined, { execute: [oidc.allowInsecureRequests] });
    const verifier = oidc.randomPKCECodeVerifier();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid profile email offline_access',
      prompt: 'consent',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      nonce,
    });
    const browser = new Browser();
    let res = await browser.go(url.href);
    expect(res.status).toBe(303);
    const login = res.headers.get('location')!;
    res = await browser.go(login);
    expect(await res.json()).toMatchObject({ prompt: 'login', client: { clientId: 'app1', name: 'App One', firstParty: false } });
    res = await browser.go(`${login}/login?user=${user.id}&session=${sid}`, { method: 'POST' });
    expect(res.status).toBe(303);
    res = await browser.go(res.headers.get('location')!);
    const consent = res.headers.get('location')!;
    res = await browser.go(consent);
    expect(await res.json()).toMatchObject({ prompt: 'consent', userId: String(user.id) });
    res = await browser.go(`${consent}/consent`, { method: 'POST' });
    res = await browser.go(res.headers.get('location')!);
    const callback = new URL(res.headers.get('location')!);
    expect(callback.searchParams.get('iss')).toBe(base);
    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedNonce: nonce,
      idTokenExpected: true,
    });
    expect(tokens.claims()).toMatchObject({ sub: String(user.id), amr: ['pwd'], auth_time: expect.any(Number), sid: expect.any(String) });
    expect(tokens.refresh_token).toEqual(expect.any(String));
    const info = await oidc.fetchUserInfo(config, tokens.access_token, String(user.id));
    expect(info).toEqual({
      sub: String(user.id),
      name: user.name,
      email: user.email,
      email_verified: false,
      updated_at: expect.any(Number),
    });
  });
});
