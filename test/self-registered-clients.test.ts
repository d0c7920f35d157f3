import { createHash, randomBytes } from 'node:crypto';
import { startTestApp, type TestContext } from './support/app.js';
import { FormBrowser, formTo, signIn } from './support/hosted-pages.js';
import { freePort } from './support/net.js';
import { seedOauthClient } from './support/oauth-clients.js';

// Clients that register themselves (RFC 7591, OIDC_REGISTRATION=open): they obey the admin API's
// rules for addresses, their consent page says no admin vouches for them, and they cannot use the
// service's origin to send a browser to their address with an error nobody asked for.

const REDIRECT = 'http://127.0.0.1:9/callback';
const AFTER_LOGOUT = 'http://127.0.0.1:9/signed-out';

let t: TestContext;
let base: string;

beforeAll(async () => {
  // The issuer is the app's own address, so that the provider's pages and redirects stay on it.
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  t = await startTestApp({ APP_URL: base, OIDC_REGISTRATION: 'open' }, { port });
});
afterAll(() => t.close());

const register = (metadata: Record<string, unknown>) =>
  t.post('/oauth2/register', { client_name: 'Connector', token_endpoint_auth_method: 'none', ...metadata });

const clientRows = () =>
  t.db.withTables<{ oauth_clients: { client_id: string; name: string; registered: boolean } }>().selectFrom('oauth_clients');

/** Registers a public client with the usual addresses; its client_id. */
async function registered(metadata: Record<string, unknown> = {}): Promise<string> {
  const res = await register({
    redirect_uris: [REDIRECT],
    post_logout_redirect_uris: [AFTER_LOGOUT],
    scope: 'openid profile',
    ...metadata,
  });
  expect(res.status).toBe(201);
  return (res.body as { client_id: string }).client_id;
}

/** An authorization request of a client, as its application would send the browser. */
function authorizeUrl(clientId: string, params: Record<string, string> = {}): string {
  const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
  const query = new URLSearchParams({
    client_id: clientId,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid profile',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 'the-state',
    ...params,
  });
  return `${base}/oauth2/authorize?${query.toString()}`;
}

describe('registration holds a client to the admin API’s rules for addresses', () => {
  it.each([
    ['plain http on a public host', { redirect_uris: ['http://connector.example.com/callback'] }, 'invalid_redirect_uri'],
    [
      'a scheme that is not a native application’s own',
      { redirect_uris: ['intent:/callback'], application_type: 'native' },
      'invalid_redirect_uri',
    ],
    [
      'the javascript: scheme',
      { redirect_uris: ['javascript:alert(document.domain)//'], application_type: 'native' },
      'invalid_redirect_uri',
    ],
    ['2,000 addresses', { redirect_uris: Array.from({ length: 2000 }, (_, i) => `https://c.example/${i}`) }, 'invalid_redirect_uri'],
    [
      'a post-logout address in plain http on a public host',
      { post_logout_redirect_uris: ['http://connector.example.com/bye'] },
      'invalid_client_metadata',
    ],
    [
      '21 post-logout addresses',
      { post_logout_redirect_uris: Array.from({ length: 21 }, (_, i) => `https://connector.example.com/bye/${i}`) },
      'invalid_client_metadata',
    ],
    ['a home page in plain http on a public host', { client_uri: 'http://connector.example.com/' }, 'invalid_client_metadata'],
    ['a key set the service would fetch', { jwks_uri: 'https://169.254.169.254/latest/meta-data/' }, 'invalid_client_metadata'],
    ['a sector identifier the service would fetch', { sector_identifier_uri: 'https://127.0.0.1:5432/' }, 'invalid_client_metadata'],
    ['a name that reverses its text', { client_name: 'Account Service \u202Enigis' }, 'invalid_client_metadata'],
  ])('refuses %s, and keeps no client', async (_, metadata, error) => {
    const name = `Refused ${randomBytes(6).toString('hex')}`;
    const res = await register({ redirect_uris: ['https://connector.example.com/callback'], client_name: name, ...metadata });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error, error_description: expect.any(String) });
    expect(await clientRows().select('client_id').where('name', '=', name).execute()).toEqual([]);
  });

  it('takes a client that follows them, marked as registered by itself whatever it says', async () => {
    const res = await register({
      redirect_uris: ['https://connector.example.com/callback', 'http://127.0.0.1:8123/callback', 'com.example.connector:/callback'],
      post_logout_redirect_uris: ['https://connector.example.com/'],
      application_type: 'native',
      self_registered: false,
    });
    // A native application's claimed https address is the library's to refuse on loopback only; these are fine.
    expect(res.status).toBe(201);
    const { client_id: clientId } = res.body as { client_id: string };
    expect(await clientRows().select(['client_id', 'registered']).where('client_id', '=', clientId).execute()).toEqual([
      { client_id: clientId, registered: true },
    ]);
  });
});

describe('errors of a client that registered itself stay on the service until a person has acted', () => {
  it('shows a refused authorization request on the error page, where an admin’s client gets the error back', async () => {
    const clientId = await registered();
    // A scope the client did not register: an error the library would send to the client's redirect_uri.
    const res = await fetch(authorizeUrl(clientId, { scope: 'openid email' }), { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await res.text()).toContain('<code>invalid_scope</code>');

    const admins = await seedOauthClient(t, { name: 'Wiki', type: 'public', redirect_uris: [REDIRECT], scopes: ['openid', 'profile'] });
    const theirs = await fetch(authorizeUrl(admins.id, { scope: 'openid email' }), { redirect: 'manual' });
    expect(theirs.status).toBe(303);
    const back = new URL(theirs.headers.get('location')!);
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
    expect(back.searchParams.get('error')).toBe('invalid_scope');
  });

  it('does not answer prompt=none with a redirect either', async () => {
    const clientId = await registered();
    const res = await fetch(authorizeUrl(clientId, { prompt: 'none' }), { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.text()).toContain('<code>login_required</code>');
  });

  it('says on the consent page that no admin vouches for it, names it as its own claim and shows where it sends the person', async () => {
    const clientId = await registered({ client_name: 'Account Service' });
    const who = await t.register();
    const browser = new FormBrowser(base);
    const consent = await signIn(browser, authorizeUrl(clientId), who.email, who.password);
    expect(consent.status).toBe(200);
    expect(consent.html).toContain('This application is not verified by Account Service: it registered itself');
    expect(consent.html).toContain('127.0.0.1:9');
    expect(consent.html).toContain('The application that calls itself “<strong>Account Service</strong>” asks to:');

    // The person has acted: their refusal goes back to the application, as for any client.
    const denied = await browser.submit(formTo(consent, '/consent'), { decision: 'deny' });
    expect(denied.status).toBe(0);
    const back = new URL(denied.url);
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('state')).toBe('the-state');
  });

  it('does not mark an admin’s client', async () => {
    const admins = await seedOauthClient(t, { name: 'Wiki', type: 'public', redirect_uris: [REDIRECT] });
    const who = await t.register();
    const consent = await signIn(new FormBrowser(base), authorizeUrl(admins.id), who.email, who.password);
    expect(consent.status).toBe(200);
    expect(consent.html).toContain('<strong>Wiki</strong> asks to:');
    expect(consent.html).not.toContain('not verified');
  });

  it('follows its post-logout address only once the person has confirmed, even with no session left', async () => {
    const clientId = await registered();
    const browser = new FormBrowser(base);
    const query = new URLSearchParams({ client_id: clientId, post_logout_redirect_uri: AFTER_LOGOUT, state: 'bye' });
    const question = await browser.request(`/oauth2/end_session?${query.toString()}`);
    expect(question.status).toBe(200);
    // A page that asks, not one that posts itself on: no script, and a button to press.
    expect(question.html).not.toContain('<script');
    expect(question.html).toContain('You are signed out of Account Service.');
    expect(question.html).toContain('Continue to 127.0.0.1:9');
    expect(question.headers.get('content-security-policy')).toContain("form-action 'self' http://127.0.0.1:9");
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(question.html)![1];
    const done = await browser.request('/oauth2/end_session/confirm', { form: { xsrf, logout: 'yes' } });
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe(`${AFTER_LOGOUT}?state=bye`);
  });

  it('lets an admin’s client’s logout without a session go on by itself, its address allowed as the form’s target', async () => {
    const admins = await seedOauthClient(t, {
      name: 'Wiki',
      type: 'public',
      redirect_uris: [REDIRECT],
      post_logout_redirect_uris: [AFTER_LOGOUT],
    });
    const query = new URLSearchParams({ client_id: admins.id, post_logout_redirect_uri: AFTER_LOGOUT });
    const page = await new FormBrowser(base).request(`/oauth2/end_session?${query.toString()}`);
    expect(page.status).toBe(200);
    expect(page.html).toContain('document.forms[0].submit()');
    expect(page.headers.get('content-security-policy')).toMatch(/form-action 'self' http:\/\/127\.0\.0\.1:9(;|$)/);
  });
});
