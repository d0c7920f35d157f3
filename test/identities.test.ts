import { createHash, randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import type { ProviderCodeTable, ProviderFlowTable, UserIdentityTable } from '../src/providers/identity-repository.js';
import { Housekeeping } from '../src/infra/housekeeping.js';
import { createLogger } from '../src/logger.js';
import { startTestApp, uniqueEmail, type TestContext } from './support/app.js';
import { auditRows } from './support/audit.js';
import { expectError } from './support/expect.js';
import { outboxDrained } from './support/outbox.js';
import { linkToken, startSmtpServer, type ReceivedMail, type TestSmtpServer } from './support/smtp.js';
import { githubProviderSettings, startGithubUpstream, type GithubAccount, type GithubUpstream } from './support/github-upstream.js';
import { startOidcUpstream, type OidcUpstream, type UpstreamAccount } from './support/oidc-upstream.js';
import { startUpstreamIssuer, type UpstreamIssuer } from './support/upstream-issuer.js';
import { until } from './support/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.js';

// A signed-in person's identities at upstream providers: listed, linked by hand through the
// provider, unlinked unless it is the last way left to sign in; the webhooks and sessions that
// name them; the callback a provider posts to (form_post); and the purge of spent provider flows.
// The providers are real peers the test runs: an OpenID provider built on oidc-provider
// (test/support/oidc-upstream.ts) and a GitHub-shaped server (test/support/github-upstream.ts);
// the webhook endpoint is a real receiver that checks every signature, and mail goes through a
// real SMTP server.

const APP = 'http://app.test/settings';
/** The service's own origin, as the browser reaches it: the callback the providers send people back to. */
const HOST = { host: 'accounts.test' };
const RESET_SUBJECT = 'Reset your password';
const SIGNUP_SUBJECT = 'Your code to create your account';

let t: TestContext;
let smtp: TestSmtpServer;
let hooks: WebhookReceiver;
let oidc: OidcUpstream;
let github: GithubUpstream;
/**
 * Apple's stand-in. oidc-provider answers form_post with a page that a browser submits; this
 * simpler peer answers with a redirect, and the test posts its fields as that page would.
 */
let posting: UpstreamIssuer;
/** Who signs in at each provider next. */
let corpAccount: UpstreamAccount;
let githubAccount: GithubAccount;

const rows = () =>
  t.db.withTables<{
    user_identities: UserIdentityTable;
    provider_flows: ProviderFlowTable;
    provider_codes: ProviderCodeTable;
    users: { id: number; password_set: boolean };
  }>();
const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

beforeAll(async () => {
  [oidc, github, posting, smtp, hooks] = await Promise.all([
    startOidcUpstream({ redirectUris: ['http://accounts.test/api/auth/providers/corp/callback'] }),
    startGithubUpstream(),
    startUpstreamIssuer(),
    startSmtpServer(),
    startWebhookReceiver(),
  ]);
  t = await startTestApp({
    AUTH_REDIRECT_URLS: 'http://app.test/*',
    SMTP_URL: smtp.url,
    MAIL_POLL_INTERVAL_MS: '100',
    EMAIL_CODE_SIGNUP: 'true',
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    WEBHOOK_POLL_INTERVAL_MS: '50',
    WEBHOOK_RETRY_BASE_MS: '100',
    HOUSEKEEPING_INTERVAL_SECONDS: '0',
  });
  const admin = await t.adminToken();
  const made = await Promise.all([
    t.post(
      '/api/identity-providers',
      { slug: 'corp', name: 'Corp', client_id: oidc.clientId, client_secret: oidc.clientSecret, issuer: oidc.issuer },
      { token: admin },
    ),
    t.post('/api/identity-providers', githubProviderSettings(github), { token: admin }),
    // The apple preset on a local issuer: the preset's way of answering (form_post), the issuer's keys.
    t.post(
      '/api/identity-providers',
      { slug: 'apple', client_id: posting.clientId, client_secret: posting.clientSecret, issuer: posting.issuer },
      { token: admin },
    ),
    t.post(
      '/api/webhooks',
      { url: hooks.url, events: ['user.identity_linked', 'user.identity_unlinked', 'session.created'] },
      { token: admin },
    ),
  ]);
  expect(made.map((res) => res.status)).toEqual([201, 201, 201, 201]);
  hooks.trust(made[3].body.data.secret);
});
afterAll(async () => {
  await t?.close();
  await Promise.all([oidc?.close(), github?.close(), posting?.close(), smtp?.close(), hooks?.close()]);
});

interface Pkce {
  verifier: string;
  challenge: string;
}

const pkce = (): Pkce => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: s256(verifier) };
};

/** The person who signs in at `corp` next: an account at the OpenID provider. */
function asCorp(account: UpstreamAccount): UpstreamAccount {
  oidc.accounts.set(account.sub, account);
  corpAccount = account;
  return account;
}

/** The person who signs in at `github` next. */
function asGithub(id: number, email: string): void {
  githubAccount = { id, login: `user${id}`, name: null, email: null, emails: [{ email, primary: true, verified: true }] };
  github.accounts.set(githubAccount.login, githubAccount);
}

/** The browser at the provider, signed in there as its next person: the provider's redirect to the service's callback (path and query). */
async function atProvider(authorizationUrl: string): Promise<string> {
  let callback: URL;
  if (authorizationUrl.startsWith(`${oidc.issuer}/`)) callback = await oidc.signIn(authorizationUrl, corpAccount.sub);
  else if (authorizationUrl.startsWith(`${github.url}/`)) callback = await github.signIn(authorizationUrl, githubAccount.login);
  else {
    const answer = await fetch(authorizationUrl, { redirect: 'manual' });
    expect(answer.status).toBe(302);
    callback = new URL(answer.headers.get('location')!);
  }
  expect(callback.origin).toBe('http://accounts.test');
  return callback.pathname + callback.search;
}

/** The browser back at the service's callback, then where it is sent: `redirect_to` with `code` or `error`. */
async function backAtCallback(callback: string): Promise<URL> {
  const back = await t.get(callback, { headers: HOST });
  expect(back.status).toBe(302);
  return new URL(back.headers.location);
}

/** Starts a link for the bearer of `token` and follows it through the provider; where the browser lands. */
async function startLink(token: string, slug: string, code = pkce()): Promise<{ landed: URL; pkce: Pkce }> {
  const started = await t.post(
    `/api/auth/identities/${slug}/link`,
    { redirect_to: APP, code_challenge: code.challenge, code_challenge_method: 'S256' },
    { token, headers: HOST },
  );
  expect(started.status).toBe(200);
  return { landed: await backAtCallback(await atProvider(started.body.data.authorization_url)), pkce: code };
}

/** A sign-in with a provider, as a browser does it; where the browser lands. */
async function signIn(slug: string, code = pkce()): Promise<{ landed: URL; pkce: Pkce }> {
  const query = new URLSearchParams({ redirect_to: APP, code_challenge: code.challenge, code_challenge_method: 'S256' });
  const start = await t.get(`/api/auth/providers/${slug}/authorize?${query.toString()}`, { headers: HOST });
  expect(start.status).toBe(302);
  return { landed: await backAtCallback(await atProvider(start.headers.location)), pkce: code };
}

/** A whole link by hand: started, through the provider, and its code exchanged, which links the identity. */
async function link(token: string, slug: string) {
  const started = await startLink(token, slug);
  return { ...started, session: await exchange(started) };
}

async function exchange({ landed, pkce: code }: { landed: URL; pkce: Pkce }) {
  expect(landed.searchParams.get('error')).toBeNull();
  const res = await t.post('/api/auth/providers/token', { code: landed.searchParams.get('code'), code_verifier: code.verifier });
  expect(res.status).toBe(200);
  return res.body.data as { access_token: string; user: { id: number; email: string } };
}

/** The user.identity_linked messages about an identity of this subject, as written beside the link (sent or not). */
const linkMessagesAbout = (subject: string) =>
  t.db
    .withTables<{ webhook_messages: { id: string; event_type: string; body: string } }>()
    .selectFrom('webhook_messages')
    .select('id')
    .where('event_type', '=', 'user.identity_linked')
    .where('body', 'like', `%${JSON.stringify(subject)}%`)
    .execute();
const errorOf = (landed: URL) => ({ error: landed.searchParams.get('error'), at: landed.origin + landed.pathname });
const identitiesOf = (userId: number) =>
  rows().selectFrom('user_identities').selectAll().where('user_id', '=', userId).orderBy('id').execute();
const listed = async (token: string) => {
  const res = await t.get('/api/auth/identities', { token });
  expect(res.status).toBe(200);
  return res.body.data as { id: number; provider: string; subject: string; email: string | null }[];
};
const passwordSet = async (userId: number) =>
  (await rows().selectFrom('users').select('password_set').where('id', '=', userId).executeTakeFirstOrThrow()).password_set;
const person = (prefix: string, verified = true) => {
  const email = uniqueEmail(prefix);
  return { sub: `sub-${email}`, email, email_verified: verified };
};
/** A new account made by a sign-in with `corp`: its identity is its only way in. */
async function providerAccount(prefix: string) {
  asCorp(person(prefix));
  const signedIn = await exchange(await signIn('corp'));
  const [identity] = await listed(signedIn.access_token);
  return { ...signedIn, identity };
}

describe('listing and linking by hand', () => {
  it('links a provider to a signed-in user whatever e-mail it gives; the code signs in that user, and the session names the provider', async () => {
    const user = await t.register();
    expect(await listed(user.access)).toEqual([]);

    // Another address, not verified: a link by hand needs neither, the person is signed in to both.
    asCorp({ sub: `sub-link-${user.email}`, email: uniqueEmail('elsewhere'), email_verified: false, name: 'Someone Else' });
    const linked = await startLink(user.access, 'corp');
    expect([...linked.landed.searchParams.keys()]).toEqual(['code']);
    expect(linked.landed.origin + linked.landed.pathname).toBe(APP);
    const sent = oidc.authorizations.at(-1)!;
    expect(sent.get('state')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(sent.get('nonce')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(sent.get('code_challenge_method')).toBe('S256');
    expect(sent.get('redirect_uri')).toBe('http://accounts.test/api/auth/providers/corp/callback');
    // Not linked yet: the application that asked completes the link by exchanging the code with its verifier.
    expect(await identitiesOf(user.id)).toEqual([]);
    const session = await exchange(linked);
    expect(session.user.id).toBe(user.id);

    const [identity] = await listed(user.access);
    expect(identity).toEqual({
      id: expect.any(Number),
      provider: 'corp',
      subject: `sub-link-${user.email}`,
      email: corpAccount.email,
      created_at: expect.any(String),
      last_used_at: expect.any(String),
    });
    expect(await identitiesOf(user.id)).toHaveLength(1);
    // The account itself is as it was: its e-mail and name are not the provider's.
    const me = await t.get('/api/auth/me', { token: user.access });
    expect(me.body.data).toMatchObject({ email: user.email, name: user.name, email_verified: false });
    expect(await auditRows(t, user.id, 'identity.linked')).toEqual([
      expect.objectContaining({
        actor_user_id: user.id,
        details: { provider: 'corp', identity_id: identity.id, subject: identity.subject, how: 'manual' },
      }),
    ]);

    // The exchange also signed this user in, by the provider, as GoTrue's linkIdentity does.
    const sessions = await t.get('/api/auth/sessions', { token: session.access_token });
    expect(sessions.status).toBe(200);
    const current = sessions.body.data.find((s: { current: boolean }) => s.current);
    const other = sessions.body.data.find((s: { current: boolean }) => !s.current);
    expect(current).toMatchObject({ provider: 'corp' });
    expect(other).not.toHaveProperty('provider');

    const linkedHook = await until(() => hooks.about('user.identity_linked', user.id)[0], 'the user.identity_linked message');
    expect(linkedHook.verifiedBy).toHaveLength(1);
    expect(linkedHook.payload.data).toEqual({
      identity: { id: identity.id, provider: 'corp', subject: identity.subject },
      user: expect.objectContaining({ id: user.id, email: user.email }),
    });
    const created = await until(
      () => hooks.about('session.created', user.id).length === 2 && hooks.about('session.created', user.id),
      'both session.created messages',
    );
    expect(created.map((m) => m.payload.data.provider)).toEqual(expect.arrayContaining(['corp', undefined]));
  });

  it('signs the linked identity in to the account it was linked to, and a second link of it changes nothing', async () => {
    const user = await t.register();
    asCorp({ sub: `sub-again-${user.email}`, email: uniqueEmail('again'), email_verified: true });
    await link(user.access, 'corp');
    const signedIn = await exchange(await signIn('corp'));
    expect(signedIn.user.id).toBe(user.id);
    const again = await link(user.access, 'corp');
    expect(again.landed.searchParams.get('code')).toEqual(expect.any(String));
    expect(await identitiesOf(user.id)).toHaveLength(1);
    expect(await auditRows(t, user.id, 'identity.linked')).toHaveLength(1);
  });

  it('refuses to link an identity that signs in to another account (identity_in_use), and the other account keeps it', async () => {
    const owner = await providerAccount('owner');
    const attacker = await t.register();
    // The attacker's own session starts a link, and the provider answers with the owner's identity.
    asCorp({ sub: owner.identity.subject, email: attacker.email, email_verified: true });
    const { landed } = await startLink(attacker.access, 'corp');
    expect(errorOf(landed)).toEqual({ error: 'identity_in_use', at: APP });
    expect(landed.searchParams.get('code')).toBeNull();
    expect(await identitiesOf(attacker.id)).toEqual([]);
    expect((await identitiesOf(owner.user.id)).map((row) => row.subject)).toEqual([owner.identity.subject]);
    expect(await auditRows(t, attacker.id, 'identity.link_failed')).toEqual([
      expect.objectContaining({ details: { reason: 'identity_in_use', provider: 'corp' } }),
    ]);
    // And the identity still signs its owner in.
    expect((await exchange(await signIn('corp'))).user.id).toBe(owner.user.id);
  });

  it("does not link a victim's identity to the account of someone who sent them the link's address", async () => {
    const attacker = await t.register();
    const attackerCode = pkce();
    const started = await t.post(
      '/api/auth/identities/corp/link',
      { redirect_to: APP, code_challenge: attackerCode.challenge, code_challenge_method: 'S256' },
      { token: attacker.access, headers: HOST },
    );
    expect(started.status).toBe(200);
    // The victim opens the address in their browser and signs in at the provider as themselves.
    const victim = asCorp(person('victim'));
    const landed = await backAtCallback(await atProvider(started.body.data.authorization_url));
    expect(landed.searchParams.get('code')).toEqual(expect.any(String));
    // The callback the victim's browser went through linked nothing and announced nothing.
    const untouched = async () => {
      expect(await identitiesOf(attacker.id)).toEqual([]);
      expect(await rows().selectFrom('user_identities').select('id').where('subject', '=', victim.sub).execute()).toEqual([]);
      expect(await auditRows(t, attacker.id, 'identity.linked')).toEqual([]);
      expect(await linkMessagesAbout(victim.sub)).toEqual([]);
    };
    await untouched();
    // The application in the victim's browser has its own verifier, not the attacker's; the code is
    // spent by its attempt, and the attacker, who holds the verifier, never saw it.
    const exchanged = await t.post('/api/auth/providers/token', { code: landed.searchParams.get('code'), code_verifier: pkce().verifier });
    expectError(exchanged, 400, 'INVALID_CODE');
    await untouched();
    expectError(
      await t.post('/api/auth/providers/token', { code: landed.searchParams.get('code'), code_verifier: attackerCode.verifier }),
      400,
      'INVALID_CODE',
    );
    await untouched();
    // The victim's identity still signs them in, to an account of their own.
    const own = await exchange(await signIn('corp'));
    expect(own.user.id).not.toBe(attacker.id);
    expect(own.user.email).toBe(victim.email);
    // Its webhook arrives, about the victim; none was ever written or sent about the attacker.
    const hook = await until(() => hooks.about('user.identity_linked', own.user.id)[0], "the victim's user.identity_linked message");
    expect(hook.payload.data.identity).toMatchObject({ provider: 'corp', subject: victim.sub });
    expect(await linkMessagesAbout(victim.sub)).toHaveLength(1);
    expect(hooks.about('user.identity_linked', attacker.id)).toEqual([]);
  });

  it('refuses the exchange of a link whose identity another account took after the callback (409), linking nothing', async () => {
    const user = await t.register();
    asCorp(person('taken'));
    const started = await startLink(user.access, 'corp');
    // Meanwhile the identity signs up an account of its own.
    const other = await exchange(await signIn('corp'));
    const exchanged = await t.post('/api/auth/providers/token', {
      code: started.landed.searchParams.get('code'),
      code_verifier: started.pkce.verifier,
    });
    expectError(exchanged, 409, 'CONFLICT');
    expect(await identitiesOf(user.id)).toEqual([]);
    expect((await identitiesOf(other.user.id)).map((row) => row.subject)).toEqual([corpAccount.sub]);
    expect(await auditRows(t, user.id, 'identity.link_failed')).toEqual([
      expect.objectContaining({ details: { reason: 'identity_in_use', provider: 'corp' } }),
    ]);
  });

  it('refuses a link whose user was disabled before the provider answered (account_disabled)', async () => {
    const user = await t.register();
    const code = pkce();
    const started = await t.post(
      '/api/auth/identities/corp/link',
      { redirect_to: APP, code_challenge: code.challenge, code_challenge_method: 'S256' },
      { token: user.access, headers: HOST },
    );
    expect(started.status).toBe(200);
    asCorp(person('disabled'));
    const callback = await atProvider(started.body.data.authorization_url);
    await t.db.updateTable('users').set({ is_active: false }).where('id', '=', user.id).execute();
    expect(errorOf(await backAtCallback(callback))).toEqual({ error: 'account_disabled', at: APP });
    expect(await identitiesOf(user.id)).toEqual([]);
  });

  it("asks a user with a second factor for it before the link's code signs them in, and the session names the provider", async () => {
    const user = await t.register();
    const enrolled = await t.post('/api/auth/mfa/totp', {}, { token: user.access });
    const secret = Secret.fromBase32(enrolled.body.data.secret as string);
    const totp = new TOTP({ secret, algorithm: 'SHA1', digits: 6, period: 30 }).generate();
    const confirmed = await t.post(`/api/auth/mfa/totp/${enrolled.body.data.factor_id}/confirm`, { code: totp }, { token: user.access });
    expect(confirmed.status).toBe(200);
    const recoveryCodes = confirmed.body.data.recovery_codes as string[];
    // A first factor ends the user's other sessions: they sign in again, with it.
    const login = await t.post('/api/auth/login/json', { email: user.email, password: user.password });
    expectError(login, 403, 'MFA_REQUIRED');
    const verify = (mfaToken: string, code: string) =>
      t.post('/api/auth/mfa/verify', { mfa_token: mfaToken, method: 'recovery_code', code });
    const signedIn = await verify(login.body.error.mfa_token, recoveryCodes[0]);
    expect(signedIn.status).toBe(200);

    asCorp({ sub: `sub-mfa-${user.email}`, email: user.email, email_verified: true });
    const linked = await startLink(signedIn.body.data.access_token, 'corp');
    const exchanged = await t.post('/api/auth/providers/token', {
      code: linked.landed.searchParams.get('code'),
      code_verifier: linked.pkce.verifier,
    });
    expectError(exchanged, 403, 'MFA_REQUIRED');
    // The link is made with the verifier; the second factor guards the session the code also opens.
    expect(await identitiesOf(user.id)).toHaveLength(1);
    const session = await verify(exchanged.body.error.mfa_token, recoveryCodes[1]);
    expect(session.status).toBe(200);
    expect(session.body.data.user.id).toBe(user.id);
    const sessions = await t.get('/api/auth/sessions', { token: session.body.data.access_token });
    expect(sessions.body.data.find((s: { current: boolean }) => s.current)).toMatchObject({ provider: 'corp' });
    const created = await until(
      () => hooks.about('session.created', user.id).find((m) => m.payload.data.provider === 'corp'),
      'the session.created message of the provider session',
    );
    expect(created.payload.data.session_id).toBe(sessions.body.data.find((s: { current: boolean }) => s.current).id);
  });

  it('answers a link request with the errors of the contract', async () => {
    const user = await t.register();
    const body = { redirect_to: APP, code_challenge: pkce().challenge, code_challenge_method: 'S256' };
    expectError(await t.post('/api/auth/identities/corp/link', body), 401, 'UNAUTHORIZED');
    expectError(await t.post('/api/auth/identities/nobody/link', body, { token: user.access }), 404, 'NOT_FOUND');
    expectError(
      await t.post('/api/auth/identities/corp/link', { ...body, redirect_to: 'https://evil.example/steal' }, { token: user.access }),
      400,
      'INVALID_REDIRECT',
    );
    expectError(
      await t.post('/api/auth/identities/corp/link', { ...body, code_challenge_method: 'plain' }, { token: user.access }),
      422,
      'VALIDATION_ERROR',
    );
    const key = await t.post('/api/auth/api-keys', { name: 'script' }, { token: user.access });
    expect(key.status).toBe(201);
    expectError(await t.post('/api/auth/identities/corp/link', body, { token: key.body.data.key }), 403, 'FORBIDDEN');
    expectError(await t.get('/api/auth/identities', { token: key.body.data.key }), 403, 'FORBIDDEN');
    expectError(await t.delete('/api/auth/identities/1', { token: key.body.data.key }), 403, 'FORBIDDEN');
    expect(await rows().selectFrom('provider_flows').select('id').where('link_user_id', '=', user.id).execute()).toEqual([]);
  });
});

describe('unlinking', () => {
  it('refuses to remove the last way to sign in, and removes an identity once another remains', async () => {
    const account = await providerAccount('only');
    const id = account.user.id;
    expect(await passwordSet(id)).toBe(false);
    const last = await t.delete(`/api/auth/identities/${account.identity.id}`, { token: account.access_token });
    expectError(last, 409, 'CONFLICT');
    expect(last.body.error.message).toMatch(/last way to sign in/);
    expect(await identitiesOf(id)).toHaveLength(1);

    asGithub(100_000 + id, uniqueEmail('gh'));
    await link(account.access_token, 'github');
    const both = await listed(account.access_token);
    expect(both.map((identity) => identity.provider)).toEqual(['corp', 'github']);

    const removed = await t.delete(`/api/auth/identities/${account.identity.id}`, { token: account.access_token });
    expect(removed.status).toBe(204);
    expect((await listed(account.access_token)).map((identity) => identity.provider)).toEqual(['github']);
    // Both links were news: the one the sign-in made with the account, and the one by hand.
    const linkedHooks = await until(
      () => hooks.about('user.identity_linked', id).length === 2 && hooks.about('user.identity_linked', id),
      'both user.identity_linked messages',
    );
    expect(linkedHooks.map((m) => m.payload.data.identity.provider).sort()).toEqual(['corp', 'github']);
    expect(await auditRows(t, id, 'identity.unlinked')).toEqual([
      expect.objectContaining({ details: { provider: 'corp', identity_id: account.identity.id, subject: account.identity.subject } }),
    ]);
    const unlinked = await until(() => hooks.about('user.identity_unlinked', id)[0], 'the user.identity_unlinked message');
    expect(unlinked.verifiedBy).toHaveLength(1);
    expect(unlinked.payload.data.identity).toEqual({ id: account.identity.id, provider: 'corp', subject: account.identity.subject });

    // The identity no longer signs in to the account: the provider does not vouch for the address, so a mailed code must prove it first.
    asCorp({ sub: account.identity.subject, email: account.user.email, email_verified: false });
    const again = await signIn('corp');
    const exchanged = await t.post('/api/auth/providers/token', {
      code: again.landed.searchParams.get('code'),
      code_verifier: again.pkce.verifier,
    });
    expectError(exchanged, 403, 'EMAIL_VERIFICATION_REQUIRED');
    expect(await identitiesOf(id)).toHaveLength(1);

    expectError(await t.delete(`/api/auth/identities/${both[1].id}`, { token: account.access_token }), 409, 'CONFLICT');
  });

  it('counts a password set by forgot-password as a way to sign in', async () => {
    const account = await providerAccount('reset');
    expectError(await t.delete(`/api/auth/identities/${account.identity.id}`, { token: account.access_token }), 409, 'CONFLICT');
    expect((await t.post('/api/auth/forgot-password', { email: account.user.email })).status).toBe(200);
    const mail = await smtp.waitFor((m) => m.to.includes(account.user.email) && m.subject === RESET_SUBJECT);
    const reset = await t.post('/api/auth/reset-password', { token: linkToken(mail, 'reset-password'), new_password: 'a-real-password-9' });
    expect(reset.status).toBe(200);
    expect(await passwordSet(account.user.id)).toBe(true);
    const login = await t.post('/api/auth/login/json', { email: account.user.email, password: 'a-real-password-9' });
    expect(login.status).toBe(200);
    expect((await t.delete(`/api/auth/identities/${account.identity.id}`, { token: login.body.data.access_token })).status).toBe(204);
    expect(await identitiesOf(account.user.id)).toEqual([]);
  });

  it('counts a passkey, which signs in on its own', async () => {
    const account = await providerAccount('passkey');
    await t.db
      .insertInto('mfa_factors')
      .values({
        user_id: account.user.id,
        type: 'webauthn',
        name: 'Laptop',
        confirmed_at: new Date(),
        credential_id: randomBytes(16).toString('base64url'),
        public_key: randomBytes(32).toString('base64url'),
        sign_count: 0,
      })
      .execute();
    expect((await t.delete(`/api/auth/identities/${account.identity.id}`, { token: account.access_token })).status).toBe(204);
  });

  it('knows an account made by an e-mailed code has no password', async () => {
    const email = uniqueEmail('mailed');
    expect((await t.post('/api/auth/email-code', { email })).status).toBe(202);
    await t.app.services.emailCode.settled();
    await outboxDrained(t.db, email);
    const mail = smtp.to(email).find((m: ReceivedMail) => m.subject === SIGNUP_SUBJECT)!;
    const code = /^ {4}(\d{6})$/m.exec(mail.text)![1];
    const signedIn = await t.post('/api/auth/email-code/verify', { email, code });
    expect(signedIn.status).toBe(200);
    expect(await passwordSet(signedIn.body.data.user.id)).toBe(false);
    asCorp(person('mailed-link'));
    await link(signedIn.body.data.access_token, 'corp');
    const [identity] = await listed(signedIn.body.data.access_token);
    expectError(await t.delete(`/api/auth/identities/${identity.id}`, { token: signedIn.body.data.access_token }), 409, 'CONFLICT');
  });

  it('of two removals at once that would leave nothing, lets one through', async () => {
    const account = await providerAccount('race');
    asGithub(200_000 + account.user.id, uniqueEmail('race-gh'));
    await link(account.access_token, 'github');
    const ids = (await listed(account.access_token)).map((identity) => identity.id);
    const answers = await Promise.all(ids.map((id) => t.delete(`/api/auth/identities/${id}`, { token: account.access_token })));
    expect(answers.map((res) => res.status).sort()).toEqual([204, 409]);
    expect(await identitiesOf(account.user.id)).toHaveLength(1);
  });

  it("answers 404 for another user's identity or an unknown one, and removes nothing", async () => {
    const account = await providerAccount('theirs');
    const other = await t.register();
    expectError(await t.delete(`/api/auth/identities/${account.identity.id}`, { token: other.access }), 404, 'NOT_FOUND');
    expectError(await t.delete('/api/auth/identities/2147483647', { token: other.access }), 404, 'NOT_FOUND');
    expectError(await t.delete('/api/auth/identities/0', { token: other.access }), 422, 'VALIDATION_ERROR');
    expectError(await t.delete(`/api/auth/identities/${account.identity.id}`), 401, 'UNAUTHORIZED');
    expect(await identitiesOf(account.user.id)).toHaveLength(1);
  });
});

describe('the callback by form post', () => {
  it('asks Apple for form_post, and takes the answer the browser posts', async () => {
    posting.person = person('apple');
    const code = pkce();
    const query = new URLSearchParams({ redirect_to: APP, code_challenge: code.challenge, code_challenge_method: 'S256' });
    const start = await t.get(`/api/auth/providers/apple/authorize?${query.toString()}`, { headers: HOST });
    expect(start.status).toBe(302);
    expect(new URL(start.headers.location).searchParams.get('response_mode')).toBe('form_post');
    expect(new URL(start.headers.location).searchParams.get('scope')).toBe('openid email');
    // The browser posts what the provider answered, with the name Apple sends on a first sign-in,
    // from the provider's page: a cross-site post, which the callback takes as its GET takes a redirect.
    const answer = new URL(await atProvider(start.headers.location), 'http://accounts.test');
    const form = { ...Object.fromEntries(answer.searchParams), user: '{"name":{"firstName":"Ada","lastName":"Lovelace"}}' };
    const crossSite = { ...HOST, origin: 'https://appleid.apple.com', 'sec-fetch-site': 'cross-site' };
    const posted = await t.post(answer.pathname, form, { form: true, headers: crossSite });
    expect(posted.status).toBe(302);
    const landed = new URL(posted.headers.location);
    expect(landed.origin + landed.pathname).toBe(APP);
    const session = await exchange({ landed, pkce: code });
    expect(session.user.email).toBe(posting.person.email);
    expect((await listed(session.access_token)).map((identity) => identity.provider)).toEqual(['apple']);

    // The same post again: the state is spent.
    expectError(await t.post(answer.pathname, form, { form: true, headers: HOST }), 400, 'INVALID_TOKEN');
    // A field the form post does not have is refused.
    expectError(await t.post(answer.pathname, { ...form, extra: 'x' }, { form: true, headers: HOST }), 422, 'VALIDATION_ERROR');
  });

  it('takes a form-posted error from the provider back to redirect_to', async () => {
    const code = pkce();
    const query = new URLSearchParams({ redirect_to: APP, code_challenge: code.challenge, code_challenge_method: 'S256' });
    const start = await t.get(`/api/auth/providers/apple/authorize?${query.toString()}`, { headers: HOST });
    const state = new URL(start.headers.location).searchParams.get('state')!;
    const posted = await t.post(
      '/api/auth/providers/apple/callback',
      { state, error: 'user_cancelled_authorize' },
      { form: true, headers: HOST },
    );
    expect(posted.status).toBe(302);
    expect(errorOf(new URL(posted.headers.location))).toEqual({ error: 'invalid_response', at: APP });
  });
});

describe('housekeeping', () => {
  it('purges provider sign-ins under way and their codes once used or expired, and keeps live ones', async () => {
    asCorp(person('purge'));
    const spentCode = await signIn('corp');
    const liveCode = await signIn('corp');
    await exchange(spentCode);
    const query = new URLSearchParams({ redirect_to: APP, code_challenge: pkce().challenge, code_challenge_method: 'S256' });
    expect((await t.get(`/api/auth/providers/corp/authorize?${query.toString()}`, { headers: HOST })).status).toBe(302);
    const longAgo = new Date(Date.now() - 48 * 3600 * 1000);
    // Everything that ended: pushed back past the retention; one live flow and one live code stay as they are.
    await rows().updateTable('provider_flows').set({ used_at: longAgo }).where('used_at', 'is not', null).execute();
    await rows().updateTable('provider_codes').set({ used_at: longAgo }).where('used_at', 'is not', null).execute();
    const liveFlows = await rows().selectFrom('provider_flows').select('id').where('used_at', 'is', null).execute();
    expect(liveFlows.length).toBeGreaterThan(0);

    const quiet = createLogger({ level: 'silent' });
    const result = await new Housekeeping(t.db, { ...t.config.housekeeping, retentionHours: 24 }, t.config.audit, quiet).purge();
    expect(result.status).toBe('done');
    expect(result.removed.provider_flows).toBeGreaterThan(0);
    expect(result.removed.provider_codes).toBeGreaterThan(0);
    expect(await rows().selectFrom('provider_flows').select('id').where('used_at', 'is not', null).execute()).toEqual([]);
    expect(await rows().selectFrom('provider_flows').select('id').where('used_at', 'is', null).execute()).toEqual(liveFlows);
    // The code not yet exchanged is still good.
    await exchange(liveCode);
  });
});
