import { createHash, randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import type { ProviderCodeTable, ProviderFlowTable, UserIdentityTable } from '../src/providers/identity-repository.js';
import { startTestApp, uniqueEmail, type TestContext } from './support/app.js';
import { auditRows, auditTable } from './support/audit.js';
import { expectError } from './support/expect.js';
import { githubProviderSettings, startGithubUpstream, type GithubAccount, type GithubUpstream } from './support/github-upstream.js';
import { startOidcUpstream, type OidcUpstream, type UpstreamAccount } from './support/oidc-upstream.js';

// Signing in with other providers against real peers the test runs: an OpenID provider built on
// oidc-provider (its login page answered for the chosen account, consent given at once; its tokens
// issued and signed by the library) and a GitHub-shaped OAuth2 server. The browser is played by
// hand, 302 by 302; the service is reached as `accounts.test`, the origin of its callbacks.

const APP = 'http://app.test/signed-in';
const HOST = { host: 'accounts.test' };
const callbackOf = (slug: string) => `http://accounts.test/api/auth/providers/${slug}/callback`;

let t: TestContext;
let admin: string;
let oidc: OidcUpstream;
let github: GithubUpstream;

const rows = () =>
  t.db.withTables<{ user_identities: UserIdentityTable; provider_flows: ProviderFlowTable; provider_codes: ProviderCodeTable }>();
const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

beforeAll(async () => {
  [oidc, github, t] = await Promise.all([
    startOidcUpstream({ redirectUris: [callbackOf('corp'), callbackOf('corp-private'), callbackOf('corp-gone')] }),
    startGithubUpstream(),
    startTestApp({ AUTH_REDIRECT_URLS: 'http://app.test/*' }),
  ]);
  admin = await t.adminToken();
  const made = await Promise.all([
    register({ slug: 'corp', name: 'Corp', client_id: oidc.clientId, client_secret: oidc.clientSecret, issuer: oidc.issuer }),
    register(githubProviderSettings(github)),
  ]);
  expect(made).toEqual([201, 201]);
});
afterAll(async () => {
  await t?.close();
  await Promise.all([oidc?.close(), github?.close()]);
});

async function register(provider: Record<string, unknown>): Promise<number> {
  return (await t.post('/api/identity-providers', provider, { token: admin })).status;
}

/** A new person at the OpenID provider. */
function oidcAccount(overrides: Partial<UpstreamAccount> = {}): UpstreamAccount {
  const email = uniqueEmail('oidc');
  const account = { sub: `sub-${randomBytes(6).toString('hex')}`, email, email_verified: true, name: 'Grace Hopper', ...overrides };
  oidc.accounts.set(account.sub, account);
  return account;
}

/** A new person at the GitHub-shaped provider, with one primary address. */
function githubAccount(email = uniqueEmail('gh'), verified = true): GithubAccount {
  const account = {
    id: 1_000_000 + Math.floor(Math.random() * 9_000_000),
    login: `octo-${randomBytes(4).toString('hex')}`,
    name: 'Octo Cat',
    emails: [{ email, primary: true, verified }],
  };
  github.accounts.set(account.login, account);
  return account;
}

interface Started {
  /** The provider's authorization URL the service sent the browser to. */
  location: string;
  verifier: string;
}

/** The application's PKCE pair and the service's 302 to the provider. */
async function start(slug: string, redirectTo = APP): Promise<Started> {
  const verifier = randomBytes(32).toString('base64url');
  const query = new URLSearchParams({ redirect_to: redirectTo, code_challenge: s256(verifier), code_challenge_method: 'S256' });
  const res = await t.get(`/api/auth/providers/${slug}/authorize?${query.toString()}`, { headers: HOST });
  expect(res.status).toBe(302);
  return { location: res.headers.location, verifier };
}

interface Landed {
  /** Where the service finally sent the browser: redirect_to with `code`, or with `error`. */
  url: URL;
  verifier: string;
  /** The provider's redirect to the service's callback, path and query. */
  callback: string;
}

/** The browser at the service's callback, as the provider sent it there. */
async function land(callback: URL, verifier: string): Promise<Landed> {
  expect(callback.origin).toBe('http://accounts.test');
  const path = callback.pathname + callback.search;
  const back = await t.get(path, { headers: HOST });
  expect(back.status).toBe(302);
  return { url: new URL(back.headers.location), verifier, callback: path };
}

/** A whole sign-in at the OpenID provider as `sub`; `alter` changes the authorization URL on its way. */
async function viaOidc(sub: string, slug = 'corp', alter?: (url: URL) => void): Promise<Landed> {
  const started = await start(slug);
  const url = new URL(started.location);
  alter?.(url);
  return land(await oidc.signIn(url.href, sub), started.verifier);
}

async function viaGithub(login: string): Promise<Landed> {
  const started = await start('github');
  return land(await github.signIn(started.location, login), started.verifier);
}

function exchange(landed: Landed) {
  expect(landed.url.searchParams.get('error')).toBeNull();
  const code = landed.url.searchParams.get('code');
  expect(code).toEqual(expect.any(String));
  return t.post('/api/auth/providers/token', { code, code_verifier: landed.verifier });
}

const errorOf = (landed: Landed) => ({
  at: landed.url.origin + landed.url.pathname,
  error: landed.url.searchParams.get('error'),
  code: landed.url.searchParams.get('code'),
});
const refusedWith = (error: string) => ({ at: APP, error, code: null });

const identitiesOf = (userId: number) =>
  rows().selectFrom('user_identities').selectAll().where('user_id', '=', userId).orderBy('id').execute();
const usersWith = (email: string) => t.db.selectFrom('users').selectAll().where('email', '=', email.toLowerCase()).execute();
const identitiesWith = (subject: string) => rows().selectFrom('user_identities').selectAll().where('subject', '=', subject).execute();
const verify = (userId: number) => t.db.updateTable('users').set({ email_verified: true }).where('id', '=', userId).execute();

/** What a sign-in may leave behind, counted: nothing of it must stay from one that failed. */
async function footprint() {
  const count = async (table: 'users' | 'sessions' | 'user_identities' | 'provider_codes') =>
    Number(
      (
        await rows()
          .selectFrom(table as 'user_identities')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return {
    users: await count('users'),
    sessions: await count('sessions'),
    identities: await count('user_identities'),
    codes: await count('provider_codes'),
  };
}

describe('an OpenID provider built on oidc-provider', () => {
  it('signs a new person up, then signs the same identity in again to the same account', async () => {
    const person = oidcAccount({ name: 'Grace Hopper' });
    const landed = await viaOidc(person.sub);
    expect([...landed.url.searchParams.keys()]).toEqual(['code']);
    expect(landed.url.origin + landed.url.pathname).toBe(APP);
    const sent = oidc.authorizations.at(-1)!;
    expect(Object.fromEntries(sent)).toMatchObject({
      client_id: oidc.clientId,
      redirect_uri: callbackOf('corp'),
      response_type: 'code',
      scope: 'openid email profile',
      code_challenge_method: 'S256',
    });
    expect(sent.get('code_challenge')).not.toBe(s256(landed.verifier));

    const first = await exchange(landed);
    expect(first.status).toBe(200);
    const user = first.body.data.user;
    expect(user).toMatchObject({ email: person.email, name: 'Grace Hopper', email_verified: true, role: 'user' });
    expect(await identitiesOf(user.id)).toEqual([
      expect.objectContaining({ subject: person.sub, email: person.email, last_used_at: expect.any(Date) }),
    ]);
    expect((await auditRows(t, user.id, 'identity.linked'))[0].details).toMatchObject({ provider: 'corp', how: 'signup' });
    const sessions = await t.get('/api/auth/sessions', { token: first.body.data.access_token });
    expect(sessions.status).toBe(200);

    const again = await exchange(await viaOidc(person.sub));
    expect(again.status).toBe(200);
    expect(again.body.data.user.id).toBe(user.id);
    expect(await identitiesOf(user.id)).toHaveLength(1);
    expect(await usersWith(person.email!)).toHaveLength(1);
    expect((await auditRows(t, user.id, 'login.succeeded')).map((e) => e.details.provider)).toEqual(['corp', 'corp']);
  });

  it('sends its client secret as discovery asks: HTTP Basic where it is listed, the form body where only that is', async () => {
    const before = oidc.tokenAuthentications.length;
    expect((await exchange(await viaOidc(oidcAccount().sub))).status).toBe(200);
    expect(oidc.tokenAuthentications.slice(before)).toEqual(['client_secret_basic']);

    const peer = await startOidcUpstream({ redirectUris: [callbackOf('corp-post')], tokenAuthMethods: ['client_secret_post'] });
    try {
      const person = { sub: 'poster', email: uniqueEmail('post'), email_verified: true };
      peer.accounts.set(person.sub, person);
      expect(await register({ slug: 'corp-post', client_id: peer.clientId, client_secret: peer.clientSecret, issuer: peer.issuer })).toBe(
        201,
      );
      const started = await start('corp-post');
      expect((await exchange(await land(await peer.signIn(started.location, person.sub), started.verifier))).status).toBe(200);
      expect(peer.tokenAuthentications).toEqual(['client_secret_post']);
    } finally {
      await peer.close();
    }
  });

  it('makes no account for an address the provider does not vouch for: the exchange asks for a code mailed to it', async () => {
    const person = oidcAccount({ email_verified: false });
    const res = await exchange(await viaOidc(person.sub));
    expectError(res, 403, 'EMAIL_VERIFICATION_REQUIRED');
    expect(await usersWith(person.email!)).toEqual([]);
    expect(await identitiesWith(person.sub)).toEqual([]);
  });

  it('links an existing account when both the provider and the account say the e-mail is verified', async () => {
    const user = await t.register();
    await verify(user.id);
    const person = oidcAccount({ email: user.email.toUpperCase(), email_verified: true });
    const res = await exchange(await viaOidc(person.sub));
    expect(res.status).toBe(200);
    expect(res.body.data.user.id).toBe(user.id);
    expect((await identitiesOf(user.id)).map((identity) => identity.subject)).toEqual([person.sub]);
    expect((await auditRows(t, user.id, 'identity.linked'))[0].details).toMatchObject({ provider: 'corp', how: 'verified_email' });
    // The password still signs in: linking took nothing away.
    expect((await t.post('/api/auth/login/json', { email: user.email, password: user.password })).status).toBe(200);
  });

  it.each([
    ['the account has verified it', true],
    ['the account has not verified it either', false],
  ])('links nothing, and asks for a mailed code, when the provider does not vouch for the address and %s', async (_case, verified) => {
    const user = await t.register();
    if (verified) await verify(user.id);
    const person = oidcAccount({ email: user.email, email_verified: false });
    const before = await footprint();
    expectError(await exchange(await viaOidc(person.sub)), 403, 'EMAIL_VERIFICATION_REQUIRED');
    // The exchange spent the code it was given and opened nothing.
    expect(await footprint()).toEqual({ ...before, codes: before.codes + 1 });
    expect(await identitiesWith(person.sub)).toEqual([]);
    expect((await t.post('/api/auth/login/json', { email: user.email, password: user.password })).status).toBe(200);
  });

  it('asks a user with a second factor for it: MFA_REQUIRED from the exchange, then the session once it is passed', async () => {
    const person = oidcAccount();
    const first = await exchange(await viaOidc(person.sub));
    const token = first.body.data.access_token;
    const enrolled = await t.post('/api/auth/mfa/totp', {}, { token });
    const totp = new TOTP({ secret: Secret.fromBase32(enrolled.body.data.secret as string), algorithm: 'SHA1', digits: 6, period: 30 });
    expect((await t.post(`/api/auth/mfa/totp/${enrolled.body.data.factor_id}/confirm`, { code: totp.generate() }, { token })).status).toBe(
      200,
    );
    const sessionsBefore = (await t.db.selectFrom('sessions').select('id').where('user_id', '=', first.body.data.user.id).execute()).length;

    const second = await exchange(await viaOidc(person.sub));
    expectError(second, 403, 'MFA_REQUIRED');
    expect(second.body.error.methods).toContain('totp');
    expect(await t.db.selectFrom('sessions').select('id').where('user_id', '=', first.body.data.user.id).execute()).toHaveLength(
      sessionsBefore,
    );
    // The code of the next period: the one that confirmed the factor is spent.
    const code = totp.generate({ timestamp: Date.now() + 30_000 });
    const verified = await t.post('/api/auth/mfa/verify', { mfa_token: second.body.error.mfa_token, method: 'totp', code });
    expect(verified.status).toBe(200);
    expect(verified.body.data.user.id).toBe(first.body.data.user.id);
    const session = await t.db
      .selectFrom('sessions')
      .selectAll()
      .where('user_id', '=', first.body.data.user.id)
      .orderBy('created_at', 'desc')
      .executeTakeFirstOrThrow();
    expect(session.provider).toBe('corp');
  });

  it('sends the application access_denied when the person declines at the provider, and makes nothing', async () => {
    const started = await start('corp');
    const before = await footprint();
    const landed = await land(await oidc.decline(started.location), started.verifier);
    expect(errorOf(landed)).toEqual(refusedWith('access_denied'));
    expect(landed.url.searchParams.get('error_description')).toBe('The sign-in was declined at the provider');
    expect(await footprint()).toEqual(before);
  });

  it('refuses a disabled account at the callback, and at the exchange a code issued before it was disabled', async () => {
    const person = oidcAccount();
    const id = (await exchange(await viaOidc(person.sub))).body.data.user.id;
    const issuedBefore = await viaOidc(person.sub);
    expect((await t.put(`/api/users/${id}`, { is_active: false }, { token: admin })).status).toBe(200);

    const before = await footprint();
    expect(errorOf(await viaOidc(person.sub))).toEqual(refusedWith('account_disabled'));
    expectError(await exchange(issuedBefore), 403, 'FORBIDDEN');
    expect(await footprint()).toEqual(before);
    expect((await auditRows(t, id, 'login.failed')).map((e) => e.details.reason)).toEqual(['account_disabled', 'account_disabled']);
  });

  it('refuses a deleted account, linked or found by its e-mail, and makes no new one in its place', async () => {
    const linked = oidcAccount();
    const id = (await exchange(await viaOidc(linked.sub))).body.data.user.id;
    expect((await t.delete(`/api/users/${id}`, { token: admin })).status).toBe(204);
    const sameEmail = oidcAccount({ email: linked.email });
    const before = await footprint();
    expect(errorOf(await viaOidc(linked.sub))).toEqual(refusedWith('account_disabled'));
    expect(errorOf(await viaOidc(sameEmail.sub))).toEqual(refusedWith('account_disabled'));
    expect(await footprint()).toEqual(before);
  });

  it('signs nobody in through a provider disabled or deleted while the person was at it', async () => {
    expect(
      await register({ slug: 'corp-gone', client_id: oidc.clientId, client_secret: oidc.clientSecret, issuer: oidc.issuer, kind: 'oidc' }),
    ).toBe(201);
    const person = oidcAccount();
    const [first, second] = [await start('corp-gone'), await start('corp-gone')];
    const [atFirst, atSecond] = [await oidc.signIn(first.location, person.sub), await oidc.signIn(second.location, person.sub)];
    const before = await footprint();

    expect((await t.put('/api/identity-providers/corp-gone', { enabled: false }, { token: admin })).status).toBe(200);
    expect(errorOf(await land(atFirst, first.verifier))).toEqual(refusedWith('provider_disabled'));
    const query = new URLSearchParams({ redirect_to: APP, code_challenge: s256(first.verifier), code_challenge_method: 'S256' });
    expectError(await t.get(`/api/auth/providers/corp-gone/authorize?${query.toString()}`, { headers: HOST }), 404, 'NOT_FOUND');

    expect((await t.delete('/api/identity-providers/corp-gone', { token: admin })).status).toBe(204);
    expectError(await t.get(atSecond.pathname + atSecond.search, { headers: HOST }), 400, 'INVALID_TOKEN');
    expect(await footprint()).toEqual(before);
    expect(await usersWith(person.email!)).toEqual([]);
  });
});

describe('what an attacker tries against a sign-in by provider', () => {
  it('refuses a replayed state, and an altered one, without spending the real one', async () => {
    const person = oidcAccount();
    const started = await start('corp');
    const callback = await oidc.signIn(started.location, person.sub);
    const altered = new URL(callback);
    altered.searchParams.set('state', `${callback.searchParams.get('state')!.slice(0, -2)}AA`);
    expectError(await t.get(altered.pathname + altered.search, { headers: HOST }), 400, 'INVALID_TOKEN');
    const stateless = new URL(callback);
    stateless.searchParams.delete('state');
    expectError(await t.get(stateless.pathname + stateless.search, { headers: HOST }), 400, 'INVALID_TOKEN');

    const landed = await land(callback, started.verifier);
    expect(landed.url.searchParams.get('code')).toEqual(expect.any(String));
    const before = await footprint();
    expectError(await t.get(landed.callback, { headers: HOST }), 400, 'INVALID_TOKEN');
    expect(await footprint()).toEqual(before);
    expect((await exchange(landed)).status).toBe(200);
  });

  it("refuses one provider's state at another provider's callback, and spends it", async () => {
    const started = await start('corp');
    const callback = await oidc.signIn(started.location, oidcAccount().sub);
    const elsewhere = `/api/auth/providers/github/callback${callback.search}`;
    expectError(await t.get(elsewhere, { headers: HOST }), 400, 'INVALID_TOKEN');
    expectError(await t.get(callback.pathname + callback.search, { headers: HOST }), 400, 'INVALID_TOKEN');
  });

  it("refuses a provider's code carried into another sign-in: the provider checks it against that sign-in's PKCE verifier", async () => {
    const victim = oidcAccount();
    const theirs = await oidc.signIn((await start('corp')).location, victim.sub);
    const attacker = await start('corp');
    const ownState = new URL(attacker.location).searchParams.get('state')!;
    const injected = new URL(callbackOf('corp'));
    injected.searchParams.set('code', theirs.searchParams.get('code')!);
    injected.searchParams.set('state', ownState);
    injected.searchParams.set('iss', oidc.issuer);
    const before = await footprint();
    expect(errorOf(await land(injected, attacker.verifier))).toEqual(refusedWith('invalid_response'));
    expect(await footprint()).toEqual(before);
    expect(await usersWith(victim.email!)).toEqual([]);
  });

  it("refuses an answer that names another issuer than the provider's (RFC 9207), and makes nothing", async () => {
    const person = oidcAccount();
    const started = await start('corp');
    const callback = await oidc.signIn(started.location, person.sub);
    expect(callback.searchParams.get('iss')).toBe(oidc.issuer);
    callback.searchParams.set('iss', 'http://localhost:1');
    const before = await footprint();
    expect(errorOf(await land(callback, started.verifier))).toEqual(refusedWith('invalid_response'));
    expect(await footprint()).toEqual(before);
    expect(await usersWith(person.email!)).toEqual([]);
  });

  it('spends a code on its first attempt: a wrong code_verifier, then the right one, are refused; so is a code used twice', async () => {
    const person = oidcAccount();
    const landed = await viaOidc(person.sub);
    const code = landed.url.searchParams.get('code');
    const before = await footprint();
    expectError(
      await t.post('/api/auth/providers/token', { code, code_verifier: randomBytes(32).toString('base64url') }),
      400,
      'INVALID_CODE',
    );
    expectError(await t.post('/api/auth/providers/token', { code, code_verifier: landed.verifier }), 400, 'INVALID_CODE');
    const made = await usersWith(person.email!);
    expect((await footprint()).sessions).toBe(before.sessions);
    expect((await auditRows(t, made[0].id, 'login.failed')).map((e) => e.details)).toEqual([
      { reason: 'wrong_code_verifier', provider: 'corp' },
    ]);

    const next = await viaOidc(person.sub);
    expect((await exchange(next)).status).toBe(200);
    const sessions = (await footprint()).sessions;
    expectError(await exchange(next), 400, 'INVALID_CODE');
    expect((await footprint()).sessions).toBe(sessions);
  });

  it('sends nobody to a redirect_to outside the allow-list, and starts nothing', async () => {
    const flows = await rows().selectFrom('provider_flows').select('id').execute();
    for (const target of [
      'https://evil.test/',
      'http://app.test.evil.test/',
      'http://app.test@evil.test/',
      '//evil.test/x',
      'javascript:alert(1)',
    ]) {
      const query = new URLSearchParams({ redirect_to: target, code_challenge: s256('x'.repeat(43)), code_challenge_method: 'S256' });
      const res = await t.get(`/api/auth/providers/corp/authorize?${query.toString()}`, { headers: HOST });
      expectError(res, 400, 'INVALID_REDIRECT');
      expect(res.headers.location).toBeUndefined();
    }
    expect(await rows().selectFrom('provider_flows').select('id').execute()).toHaveLength(flows.length);
  });

  it('refuses an ID token that oidc-provider signed for another nonce', async () => {
    const person = oidcAccount();
    const before = await footprint();
    const landed = await viaOidc(person.sub, 'corp', (url) => url.searchParams.set('nonce', randomBytes(32).toString('base64url')));
    expect(errorOf(landed)).toEqual(refusedWith('invalid_response'));
    expect(await footprint()).toEqual(before);
    expect(await usersWith(person.email!)).toEqual([]);
  });

  it.each([
    ['wrong_aud', 'an audience of another client, signed with the provider key'],
    ['wrong_signature', 'a signature by a key not in the JWKS'],
  ] as const)('refuses an ID token with %s (%s), and makes nothing', async (tamper, _what) => {
    const person = oidcAccount();
    const before = await footprint();
    oidc.tamper = tamper;
    try {
      expect(errorOf(await viaOidc(person.sub))).toEqual(refusedWith('invalid_response'));
    } finally {
      oidc.tamper = 'none';
    }
    expect(await footprint()).toEqual(before);
    expect(await usersWith(person.email!)).toEqual([]);
    const failed = await auditTable(t)
      .selectFrom('audit_events')
      .selectAll()
      .where('event_type', '=', 'login.failed')
      .where('subject_user_id', 'is', null)
      .orderBy('id')
      .execute();
    expect(failed.at(-1)!.details).toEqual({ reason: 'invalid_response', provider: 'corp' });
  });

  it('tells the application when the provider cannot be reached, at the start or at the callback, and keeps nothing', async () => {
    const peer = await startOidcUpstream({ redirectUris: [callbackOf('corp-private')] });
    const person = { sub: 'someone', email: uniqueEmail('unreachable'), email_verified: true };
    peer.accounts.set(person.sub, person);
    expect(await register({ slug: 'corp-private', client_id: peer.clientId, client_secret: peer.clientSecret, issuer: peer.issuer })).toBe(
      201,
    );
    const started = await start('corp-private');
    const callback = await peer.signIn(started.location, person.sub);
    await peer.close();

    const before = await footprint();
    const landed = await land(callback, started.verifier);
    expect(errorOf(landed)).toEqual(refusedWith('temporarily_unavailable'));
    expect(landed.url.searchParams.get('error_description')).toMatch(/could not be reached/);
    expect(await footprint()).toEqual(before);
    expect(await usersWith(person.email)).toEqual([]);

    // A new start, with the provider's metadata forgotten (its settings changed), cannot read it.
    expect((await t.put('/api/identity-providers/corp-private', { name: 'Corp (private)' }, { token: admin })).status).toBe(200);
    const flows = await rows().selectFrom('provider_flows').select('id').execute();
    const res = await start('corp-private');
    const back = new URL(res.location);
    expect(back.origin + back.pathname).toBe(APP);
    expect(back.searchParams.get('error')).toBe('temporarily_unavailable');
    expect(await rows().selectFrom('provider_flows').select('id').execute()).toHaveLength(flows.length);
  });
});

describe('linking by hand, from a signed-in session', () => {
  /** A signed-in user's link: the service's answer, and the browser through the provider and back. */
  async function link(token: string, slug: string, through: (authorizationUrl: string) => Promise<URL>): Promise<Landed> {
    const verifier = randomBytes(32).toString('base64url');
    const res = await t.post(
      `/api/auth/identities/${slug}/link`,
      { redirect_to: APP, code_challenge: s256(verifier), code_challenge_method: 'S256' },
      { token, headers: HOST },
    );
    expect(res.status).toBe(200);
    return land(await through(res.body.data.authorization_url as string), verifier);
  }
  const listed = async (token: string) => {
    const res = await t.get('/api/auth/identities', { token });
    expect(res.status).toBe(200);
    return res.body.data as { id: number; provider: string; subject: string; email: string | null }[];
  };

  it('links the identity that met EMAIL_VERIFICATION_REQUIRED once the person signs in, after which it signs in to that account', async () => {
    const user = await t.register();
    const person = oidcAccount({ email: user.email, email_verified: false });
    expectError(await exchange(await viaOidc(person.sub)), 403, 'EMAIL_VERIFICATION_REQUIRED');

    const linked = await link(user.access, 'corp', (url) => oidc.signIn(url, person.sub));
    const res = await exchange(linked);
    expect(res.status).toBe(200);
    expect(res.body.data.user.id).toBe(user.id);
    expect(await listed(user.access)).toEqual([expect.objectContaining({ provider: 'corp', subject: person.sub, email: user.email })]);
    expect((await auditRows(t, user.id, 'identity.linked'))[0].details).toMatchObject({ provider: 'corp', how: 'manual' });

    const again = await exchange(await viaOidc(person.sub));
    expect(again.status).toBe(200);
    expect(again.body.data.user.id).toBe(user.id);
  });

  it('links an identity whatever its e-mail, and one of another provider beside it', async () => {
    const user = await t.register();
    const person = oidcAccount({ email: uniqueEmail('elsewhere'), email_verified: false });
    const octo = githubAccount(uniqueEmail('gh-elsewhere'), false);
    // Each code, exchanged with its verifier, links its identity (the callback links nothing).
    expect((await exchange(await link(user.access, 'corp', (url) => oidc.signIn(url, person.sub)))).body.data.user.id).toBe(user.id);
    expect((await exchange(await link(user.access, 'github', (url) => github.signIn(url, octo.login)))).body.data.user.id).toBe(user.id);
    expect((await listed(user.access)).map((identity) => [identity.provider, identity.subject])).toEqual([
      ['corp', person.sub],
      ['github', String(octo.id)],
    ]);
    expect(await usersWith(person.email!)).toEqual([]);
    expect((await exchange(await viaGithub(octo.login))).body.data.user.id).toBe(user.id);
  });

  it('refuses to link an identity that signs in to another account (identity_in_use), and changes nothing', async () => {
    const person = oidcAccount();
    const owner = (await exchange(await viaOidc(person.sub))).body.data.user.id;
    const other = await t.register();
    const before = await footprint();
    expect(errorOf(await link(other.access, 'corp', (url) => oidc.signIn(url, person.sub)))).toEqual(refusedWith('identity_in_use'));
    expect(await footprint()).toEqual(before);
    expect(await listed(other.access)).toEqual([]);
    expect((await identitiesWith(person.sub)).map((identity) => identity.user_id)).toEqual([owner]);
    expect((await auditRows(t, other.id, 'identity.link_failed')).map((e) => e.details)).toEqual([
      { reason: 'identity_in_use', provider: 'corp' },
    ]);
  });

  it('keeps the last way to sign in: an account made by a provider cannot unlink its only identity until it links another', async () => {
    const person = oidcAccount();
    const signedUp = (await exchange(await viaOidc(person.sub))).body.data;
    const token = signedUp.access_token as string;
    const [only] = await listed(token);
    expectError(await t.delete(`/api/auth/identities/${only.id}`, { token }), 409, 'CONFLICT');
    expect(await identitiesWith(person.sub)).toHaveLength(1);

    const octo = githubAccount(uniqueEmail('gh-second'), false);
    expect((await exchange(await link(token, 'github', (url) => github.signIn(url, octo.login)))).status).toBe(200);
    expect(await t.delete(`/api/auth/identities/${only.id}`, { token })).toMatchObject({ status: 204 });
    expect(await identitiesWith(person.sub)).toEqual([]);
    expect((await auditRows(t, signedUp.user.id, 'identity.unlinked'))[0].details).toMatchObject({ provider: 'corp', subject: person.sub });
    const [left] = await listed(token);
    expect(left).toMatchObject({ provider: 'github', subject: String(octo.id) });
    expectError(await t.delete(`/api/auth/identities/${left.id}`, { token }), 409, 'CONFLICT');

    // The unlinked identity no longer signs in to the account: its verified address now meets the account.
    const landed = await viaOidc(person.sub);
    expect(signedUp.user.email_verified).toBe(true);
    const res = await exchange(landed);
    expect(res.body.data.user.id).toBe(signedUp.user.id);
    expect((await auditRows(t, signedUp.user.id, 'identity.linked')).at(-1)!.details).toMatchObject({ how: 'verified_email' });
  });

  it("lets a user with a password unlink their only identity, and nobody unlink another user's", async () => {
    const user = await t.register();
    const person = oidcAccount({ email: uniqueEmail('mine'), email_verified: false });
    expect((await exchange(await link(user.access, 'corp', (url) => oidc.signIn(url, person.sub)))).status).toBe(200);
    const [mine] = await listed(user.access);
    const stranger = await t.register();
    expectError(await t.delete(`/api/auth/identities/${mine.id}`, { token: stranger.access }), 404, 'NOT_FOUND');
    expect(await identitiesWith(person.sub)).toHaveLength(1);
    expect((await t.delete(`/api/auth/identities/${mine.id}`, { token: user.access })).status).toBe(204);
    expect(await listed(user.access)).toEqual([]);
  });
});

describe('a GitHub-shaped OAuth2 provider', () => {
  it('signs up with the primary address of /user/emails, then signs the same identity in again', async () => {
    const email = uniqueEmail('gh');
    const person = githubAccount(email);
    person.emails.unshift({ email: uniqueEmail('gh-other'), primary: false, verified: true });
    const landed = await viaGithub(person.login);
    const sent = github.authorizations.at(-1)!;
    expect(sent.get('nonce')).toBeNull();
    expect(sent.get('code_challenge_method')).toBe('S256');
    expect(sent.get('redirect_uri')).toBe(callbackOf('github'));
    const first = await exchange(landed);
    expect(first.status).toBe(200);
    expect(first.body.data.user).toMatchObject({ email, name: 'Octo Cat', email_verified: true });
    expect((await identitiesOf(first.body.data.user.id)).map((i) => [i.subject, i.email])).toEqual([[String(person.id), email]]);

    // The person changes the primary address at GitHub: the same identity signs in to the same account.
    person.emails = [{ email: uniqueEmail('gh-new'), primary: true, verified: true }];
    const again = await exchange(await viaGithub(person.login));
    expect(again.status).toBe(200);
    expect(again.body.data.user.id).toBe(first.body.data.user.id);
    expect(await identitiesOf(first.body.data.user.id)).toEqual([expect.objectContaining({ email: person.emails[0].email })]);
  });

  it('links an existing account on a verified primary address when the account has verified it too', async () => {
    const user = await t.register();
    await verify(user.id);
    const person = githubAccount(user.email, true);
    const res = await exchange(await viaGithub(person.login));
    expect(res.status).toBe(200);
    expect(res.body.data.user.id).toBe(user.id);
    expect((await identitiesOf(user.id)).map((i) => i.subject)).toEqual([String(person.id)]);
  });

  it('links nothing, and asks for a mailed code, when GitHub has not verified the primary address', async () => {
    const user = await t.register();
    await verify(user.id);
    const person = githubAccount(user.email, false);
    const before = await footprint();
    expectError(await exchange(await viaGithub(person.login)), 403, 'EMAIL_VERIFICATION_REQUIRED');
    expect(await footprint()).toEqual({ ...before, codes: before.codes + 1 });
    expect(await identitiesWith(String(person.id))).toEqual([]);
  });

  it('refuses a GitHub code carried into another sign-in, as GitHub refuses it (200 with an error)', async () => {
    const victim = githubAccount();
    const theirs = await github.signIn((await start('github')).location, victim.login);
    const attacker = await start('github');
    const injected = new URL(callbackOf('github'));
    injected.searchParams.set('code', theirs.searchParams.get('code')!);
    injected.searchParams.set('state', new URL(attacker.location).searchParams.get('state')!);
    const before = await footprint();
    expect(errorOf(await land(injected, attacker.verifier))).toEqual(refusedWith('invalid_response'));
    expect(github.refusals.at(-1)).toBe('bad_verification_code');
    expect(await footprint()).toEqual(before);
  });
});

describe('an address spelled with characters that stand for ASCII ones', () => {
  /** `kate…@example.com` with its first letter capitalised as the Kelvin sign (U+212A), which lower-cases to `k`. */
  const kelvin = (email: string) => `\u212A${email.slice(1)}`;

  it('refuses a verified Kelvin-sign spelling of a local account at an OpenID provider, and links nothing', async () => {
    const kate = await t.register({ email: uniqueEmail('kate') });
    await verify(kate.id);
    const person = oidcAccount({ email: kelvin(kate.email), email_verified: true });
    const before = await footprint();
    expect(errorOf(await viaOidc(person.sub))).toEqual(refusedWith('invalid_response'));
    expect(await footprint()).toEqual(before);
    expect(await identitiesWith(person.sub)).toEqual([]);
    expect(await identitiesOf(kate.id)).toEqual([]);
    expect(await auditRows(t, kate.id, 'identity.linked')).toEqual([]);
  });

  it('refuses a primary address with the long s or fullwidth letters at a GitHub-shaped provider, and links nothing', async () => {
    const sam = await t.register({ email: uniqueEmail('sam') });
    await verify(sam.id);
    const fullwidth = [...sam.email]
      .map((c) => (c >= 'a' && c <= 'z' ? String.fromCodePoint(c.codePointAt(0)! - 0x61 + 0xff41) : c))
      .join('');
    for (const spelling of [`\u017F${sam.email.slice(1)}`, fullwidth]) {
      const person = githubAccount(spelling, true);
      const before = await footprint();
      expect(errorOf(await viaGithub(person.login))).toEqual(refusedWith('invalid_response'));
      expect(await footprint()).toEqual(before);
      expect(await identitiesWith(String(person.id))).toEqual([]);
    }
    expect(await identitiesOf(sam.id)).toEqual([]);
  });

  it('compares a GitHub primary address as stored: trimmed and its ASCII letters lower-cased', async () => {
    const user = await t.register();
    await verify(user.id);
    const person = githubAccount(`  ${user.email.toUpperCase()} `, true);
    const res = await exchange(await viaGithub(person.login));
    expect(res.status).toBe(200);
    expect(res.body.data.user.id).toBe(user.id);
  });
});
