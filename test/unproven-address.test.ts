import { createHash, randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import type { IdentityProviderTable } from '../src/providers/provider-repository.js';
import type { ProviderCodeTable, UserIdentityTable } from '../src/providers/identity-repository.js';
import { startTestApp, uniqueEmail, type RegisteredUser, type Response, type TestContext } from './support/app.js';
import { auditRows } from './support/audit.js';
import { expectError } from './support/expect.js';
import { githubProviderSettings, startGithubUpstream, type GithubAccount, type GithubUpstream } from './support/github-upstream.js';
import { startOidcUpstream, type OidcUpstream, type UpstreamAccount } from './support/oidc-upstream.js';
import { outboxDrained } from './support/outbox.js';
import { linkToken, startSmtpServer, type ReceivedMail, type TestSmtpServer } from './support/smtp.js';

// An address nobody has proven belongs to nobody. A provider that does not vouch for the address it
// gives makes no account and joins none until a code mailed to the address is entered; and the first
// proof of the mailbox of an account whose address was never verified (an e-mailed code, a provider
// vouching for it, a reset link) ends every way in set up before it. Each attack is played over HTTP
// against real upstream providers and a real SMTP sink.

const APP = 'http://app.test/signed-in';
const HOST = { host: 'accounts.test' };
const callbackOf = (slug: string) => `http://accounts.test/api/auth/providers/${slug}/callback`;
const PROOF_SUBJECT = 'Your code to confirm your e-mail address';
const CLAIMED_SUBJECT = 'Your e-mail address was confirmed, and earlier sign-in methods were removed';

let smtp: TestSmtpServer;
let oidc: OidcUpstream;
let github: GithubUpstream;
let t: TestContext;
let admin: string;

const rows = () =>
  t.db.withTables<{ user_identities: UserIdentityTable; provider_codes: ProviderCodeTable; identity_providers: IdentityProviderTable }>();
const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

beforeAll(async () => {
  smtp = await startSmtpServer();
  [oidc, github, t] = await Promise.all([
    startOidcUpstream({ redirectUris: [callbackOf('corp'), callbackOf('corp-trusted')] }),
    startGithubUpstream(),
    startTestApp({
      SMTP_URL: smtp.url,
      MAIL_POLL_INTERVAL_MS: '100',
      APP_URL: 'http://app.test',
      AUTH_REDIRECT_URLS: 'http://app.test/*',
      RATE_LIMIT_ENABLED: 'true',
      AUTH_RATE_LIMIT_PER_MINUTE: '100000',
      RATE_LIMIT_PER_MINUTE: '100000',
    }),
  ]);
  admin = await t.adminToken();
  const corp = { name: 'Corp', client_id: oidc.clientId, client_secret: oidc.clientSecret, issuer: oidc.issuer };
  const made = await Promise.all([
    t.post('/api/identity-providers', { slug: 'corp', ...corp }, { token: admin }),
    t.post('/api/identity-providers', { slug: 'corp-trusted', ...corp, trust_email: true }, { token: admin }),
    t.post('/api/identity-providers', githubProviderSettings(github), { token: admin }),
  ]);
  expect(made.map((res) => res.status)).toEqual([201, 201, 201]);
  expect(made.map((res) => res.body.data.trust_email)).toEqual([false, true, false]);
});
afterAll(async () => {
  await t?.close();
  await Promise.all([oidc?.close(), github?.close(), smtp?.close()]);
});

function oidcAccount(overrides: Partial<UpstreamAccount> = {}): UpstreamAccount {
  const account = {
    sub: `sub-${randomBytes(6).toString('hex')}`,
    email: uniqueEmail('oidc'),
    email_verified: false,
    name: 'Mallory',
    ...overrides,
  };
  oidc.accounts.set(account.sub, account);
  return account;
}

function githubAccount(email: string, verified: boolean): GithubAccount {
  const account = {
    id: 1_000_000 + Math.floor(Math.random() * 9_000_000),
    login: `octo-${randomBytes(4).toString('hex')}`,
    name: 'Octo Cat',
    emails: [{ email, primary: true, verified }],
  };
  github.accounts.set(account.login, account);
  return account;
}

/** A browser's whole sign-in, 302 by 302: the code at redirect_to and the application's verifier. */
async function signIn(slug: string, at: (location: string) => Promise<URL>): Promise<{ code: string; verifier: string }> {
  const verifier = randomBytes(32).toString('base64url');
  const query = new URLSearchParams({ redirect_to: APP, code_challenge: s256(verifier), code_challenge_method: 'S256' });
  const start = await t.get(`/api/auth/providers/${slug}/authorize?${query.toString()}`, { headers: HOST });
  expect(start.status).toBe(302);
  const callback = await at(start.headers.location);
  const back = await t.get(callback.pathname + callback.search, { headers: HOST });
  expect(back.status).toBe(302);
  const landed = new URL(back.headers.location);
  expect(landed.searchParams.get('error')).toBeNull();
  return { code: landed.searchParams.get('code')!, verifier };
}

const viaOidc = (sub: string, slug = 'corp') => signIn(slug, (location) => oidc.signIn(location, sub));
const viaGithub = (login: string) => signIn('github', (location) => github.signIn(location, login));
const exchange = (landed: { code: string; verifier: string }) =>
  t.post('/api/auth/providers/token', { code: landed.code, code_verifier: landed.verifier });
const verifyAddress = (verificationToken: string, code: string) =>
  t.post('/api/auth/providers/verify-email', { verification_token: verificationToken, code });

const usersWith = (email: string) => t.db.selectFrom('users').selectAll().where('email', '=', email.toLowerCase()).execute();
const identitiesWith = (subject: string) => rows().selectFrom('user_identities').selectAll().where('subject', '=', subject).execute();
const sessionsOf = (userId: number) =>
  t.db.selectFrom('sessions').select(['id', 'revoked_at']).where('user_id', '=', userId).orderBy('created_at').execute();

async function mailsTo(email: string, subject: string): Promise<ReceivedMail[]> {
  await outboxDrained(t.db, email.toLowerCase());
  return smtp.to(email).filter((mail) => mail.subject === subject);
}

function codeIn(mail: ReceivedMail): string {
  const match = /^ {4}(\d{6})$/m.exec(mail.text);
  if (!match) throw new Error(`no code in:\n${mail.text}`);
  return match[1];
}

const otherCode = (code: string) => (code === '000000' ? '111111' : '000000');

/** The 403 that asks for the mailed code, and the code the mail brought. */
async function challenged(res: Response, email: string): Promise<{ token: string; code: string }> {
  expectError(res, 403, 'EMAIL_VERIFICATION_REQUIRED');
  expect(res.body.error.verification_token).toEqual(expect.any(String));
  const mails = await mailsTo(email, PROOF_SUBJECT);
  expect(mails).toHaveLength(1);
  expect(mails[0].text).not.toContain('http');
  return { token: res.body.error.verification_token as string, code: codeIn(mails[0]) };
}

describe('a provider that does not vouch for the address', () => {
  it('OpenID Connect, email_verified false: no account, identity or session until the mailed code; a wrong code is refused', async () => {
    const person = oidcAccount();
    const { token, code } = await challenged(await exchange(await viaOidc(person.sub)), person.email!);
    // The exchange made nothing: no user, no identity, no session.
    expect(await usersWith(person.email!)).toEqual([]);
    expect(await identitiesWith(person.sub)).toEqual([]);

    expectError(await verifyAddress(token, otherCode(code)), 400, 'INVALID_CODE');
    expectError(await verifyAddress('not-a-token', code), 400, 'INVALID_CODE');
    expect(await usersWith(person.email!)).toEqual([]);
    expect(await identitiesWith(person.sub)).toEqual([]);

    const res = await verifyAddress(token, code);
    expect(res.status).toBe(200);
    expect(res.body.data.user).toMatchObject({ email: person.email!.toLowerCase(), email_verified: true });
    const [user] = await usersWith(person.email!);
    expect(user.email_verified).toBe(true);
    expect((await identitiesWith(person.sub)).map((identity) => identity.user_id)).toEqual([user.id]);
    expect((await sessionsOf(user.id)).filter((session) => session.revoked_at === null)).toHaveLength(1);
    expect((await t.get('/api/auth/me', { token: res.body.data.access_token })).status).toBe(200);
    // The code is spent.
    expectError(await verifyAddress(token, code), 400, 'INVALID_CODE');
  });

  it('a squatter at the provider with the victim’s address never reaches the victim’s account: the code goes to the victim', async () => {
    const victim = await t.register({ email: uniqueEmail('victim') });
    await t.db.updateTable('users').set({ email_verified: true }).where('id', '=', victim.id).execute();
    const squatter = oidcAccount({ email: victim.email });
    const res = await exchange(await viaOidc(squatter.sub));
    const { token, code } = await challenged(res, victim.email);
    expectError(await verifyAddress(token, otherCode(code)), 400, 'INVALID_CODE');
    expect(await identitiesWith(squatter.sub)).toEqual([]);
    expect(await auditRows(t, victim.id, 'login.failed')).toEqual(
      expect.arrayContaining([expect.objectContaining({ details: { reason: 'invalid_code', method: 'provider' } })]),
    );
    // Five wrong codes void it: the right one no longer works either.
    for (let i = 0; i < 4; i++) expectError(await verifyAddress(token, otherCode(code)), 400, 'INVALID_CODE');
    expectError(await verifyAddress(token, code), 400, 'INVALID_CODE');
    expect(await identitiesWith(squatter.sub)).toEqual([]);
    // The wrong codes counted toward the account's lockout, as wrong passwords do.
    expectError(await t.post('/api/auth/login/json', { email: victim.email, password: victim.password }), 429, 'RATE_LIMITED');
    expect(await usersWith(victim.email)).toEqual([expect.objectContaining({ id: victim.id, email_verified: true })]);
  });

  it('GitHub-shaped, primary address unverified: no account until the mailed code', async () => {
    const email = uniqueEmail('gh');
    const person = githubAccount(email, false);
    const { token, code } = await challenged(await exchange(await viaGithub(person.login)), email);
    expect(await usersWith(email)).toEqual([]);
    expect(await identitiesWith(String(person.id))).toEqual([]);
    expectError(await verifyAddress(token, otherCode(code)), 400, 'INVALID_CODE');
    expect(await usersWith(email)).toEqual([]);

    const res = await verifyAddress(token, code);
    expect(res.status).toBe(200);
    const [user] = await usersWith(email);
    expect(user).toMatchObject({ email_verified: true });
    expect((await identitiesWith(String(person.id))).map((identity) => identity.user_id)).toEqual([user.id]);
  });

  it('a provider an admin marked trust_email signs in at once, the address verified', async () => {
    const person = oidcAccount();
    const res = await exchange(await viaOidc(person.sub, 'corp-trusted'));
    expect(res.status).toBe(200);
    expect(res.body.data.user).toMatchObject({ email: person.email!.toLowerCase(), email_verified: true });
    expect(smtp.to(person.email!)).toEqual([]);
    const updated = await t.put('/api/identity-providers/corp-trusted', { trust_email: false }, { token: admin });
    expect(updated.body.data.trust_email).toBe(false);
    expect((await t.put('/api/identity-providers/corp-trusted', { trust_email: true }, { token: admin })).status).toBe(200);
  });
});

/** What an attacker sets up on an account holding someone else's address: a password, a session, an API key, a TOTP factor, an identity. */
async function squat(): Promise<{ attacker: RegisteredUser; apiKey: string }> {
  const attacker = await t.register({ email: uniqueEmail('victim'), password: 'attacker-password-1' });
  const api = t.clientFor(attacker.access);
  const key = await api.POST('/api/auth/api-keys', { body: { name: 'Backdoor' } });
  expect(key.response.status).toBe(201);
  const started = await api.POST('/api/auth/mfa/totp', { body: { name: 'Phone' } });
  const { factor_id: id, secret } = started.data!.data;
  const totp = new TOTP({ secret: Secret.fromBase32(secret) });
  expect(
    (await api.POST('/api/auth/mfa/totp/{id}/confirm', { params: { path: { id } }, body: { code: totp.generate() } })).response.status,
  ).toBe(200);
  const [corp] = await rows().selectFrom('identity_providers').select('id').where('slug', '=', 'corp').execute();
  await rows()
    .insertInto('user_identities')
    .values({ user_id: attacker.id, provider_id: corp.id, subject: `attacker-${randomBytes(4).toString('hex')}`, email: attacker.email })
    .execute();
  return { attacker, apiKey: key.data!.data.key };
}

/** Nothing the attacker set up works or remains. */
async function expectLockedOut(attacker: RegisteredUser, apiKey: string, keepSession?: string): Promise<void> {
  expectError(await t.post('/api/auth/login/json', { email: attacker.email, password: attacker.password }), 401, 'INVALID_CREDENTIALS');
  expect((await t.post('/api/auth/refresh', { refresh_token: attacker.refresh })).status).toBe(401);
  expectError(await t.get('/api/auth/me', { token: attacker.access }), 401, 'UNAUTHORIZED');
  expectError(await t.get('/api/auth/me', { token: apiKey }), 401, 'UNAUTHORIZED');
  const count = async (table: 'api_keys' | 'mfa_factors' | 'mfa_recovery_codes') =>
    (await t.db.selectFrom(table).select('user_id').where('user_id', '=', attacker.id).execute()).length;
  expect([await count('api_keys'), await count('mfa_factors'), await count('mfa_recovery_codes')]).toEqual([0, 0, 0]);
  expect(await rows().selectFrom('user_identities').select('id').where('user_id', '=', attacker.id).execute()).toEqual([]);
  const live = (await sessionsOf(attacker.id)).filter((session) => session.revoked_at === null).map((session) => session.id);
  expect(live).toEqual(keepSession ? [keepSession] : []);
}

async function claimedMail(email: string): Promise<ReceivedMail> {
  const mails = await mailsTo(email, CLAIMED_SUBJECT);
  expect(mails).toHaveLength(1);
  expect(mails[0].text).toMatch(/the password/);
  expect(mails[0].text).toMatch(/1 API key/);
  expect(mails[0].text).toMatch(/1 second factor/);
  expect(mails[0].text).toMatch(/linked sign-in with corp/);
  expect(mails[0].text).toMatch(/someone else had tried to use your address/);
  return mails[0];
}

describe('the first proof of a mailbox ends every way in set up before it', () => {
  it('an e-mailed code: the registrant’s password, sessions, API key, factor and identity end; the victim is in alone', async () => {
    const { attacker, apiKey } = await squat();
    expect((await t.post('/api/auth/email-code', { email: attacker.email })).status).toBe(202);
    await t.app.services.emailCode.settled();
    const [mail] = await mailsTo(attacker.email, 'Your sign-in code');
    const res = await t.post('/api/auth/email-code/verify', { email: attacker.email, code: codeIn(mail) });
    // No second factor asked: the squatter's factor is gone with the rest.
    expect(res.status).toBe(200);
    expect(res.body.data.user).toMatchObject({ id: attacker.id, email_verified: true });
    const { sid } = JSON.parse(Buffer.from((res.body.data.access_token as string).split('.')[1], 'base64url').toString()) as {
      sid: string;
    };
    await expectLockedOut(attacker, apiKey, sid);
    expect((await t.get('/api/auth/me', { token: res.body.data.access_token })).status).toBe(200);
    const row = await t.db
      .withTables<{ users: { id: number; password_set: boolean } }>()
      .selectFrom('users')
      .select('password_set')
      .where('id', '=', attacker.id)
      .executeTakeFirstOrThrow();
    expect(row.password_set).toBe(false);
    await claimedMail(attacker.email);
    expect(await auditRows(t, attacker.id, 'email.verified')).toEqual([
      expect.objectContaining({
        details: {
          method: 'email_code',
          password_removed: true,
          sessions_ended: 1,
          api_keys_removed: 1,
          factors_removed: 1,
          identities_removed: 1,
        },
      }),
    ]);
    expect(await auditRows(t, attacker.id, 'identity.unlinked')).toHaveLength(1);
    expect(await auditRows(t, attacker.id, 'mfa.reset')).toEqual([
      expect.objectContaining({ details: { factors_removed: 1, reason: 'email_claimed' } }),
    ]);
  });

  it('a password reset: the new password works, the rest set up before ends', async () => {
    const { attacker, apiKey } = await squat();
    expect((await t.post('/api/auth/forgot-password', { email: attacker.email })).status).toBe(200);
    await t.app.services.account.settled();
    const [mail] = await mailsTo(attacker.email, 'Reset your password');
    const reset = await t.post('/api/auth/reset-password', { token: linkToken(mail, 'reset-password'), new_password: 'victim-password-2' });
    expect(reset.status).toBe(200);
    await expectLockedOut(attacker, apiKey);
    expect((await t.post('/api/auth/login/json', { email: attacker.email, password: 'victim-password-2' })).status).toBe(200);
    const notice = (await mailsTo(attacker.email, CLAIMED_SUBJECT))[0];
    expect(notice.text).toMatch(/1 API key/);
    expect(notice.text).not.toMatch(/Forgot password"\./);
  });

  it('a provider vouching for the address: the identity joins the account, and the registrant’s ways in end', async () => {
    const { attacker, apiKey } = await squat();
    const owner = oidcAccount({ email: attacker.email, email_verified: true });
    const res = await exchange(await viaOidc(owner.sub));
    expect(res.status).toBe(200);
    expect(res.body.data.user).toMatchObject({ id: attacker.id, email_verified: true });
    const { sid } = JSON.parse(Buffer.from((res.body.data.access_token as string).split('.')[1], 'base64url').toString()) as {
      sid: string;
    };
    expectError(await t.get('/api/auth/me', { token: apiKey }), 401, 'UNAUTHORIZED');
    expectError(await t.post('/api/auth/login/json', { email: attacker.email, password: attacker.password }), 401, 'INVALID_CREDENTIALS');
    expect((await sessionsOf(attacker.id)).filter((session) => session.revoked_at === null).map((session) => session.id)).toEqual([sid]);
    expect(
      (await rows().selectFrom('user_identities').select('subject').where('user_id', '=', attacker.id).execute()).map((i) => i.subject),
    ).toEqual([owner.sub]);
    await claimedMail(attacker.email);
  });

  it('an account whose address was already verified is left as it is', async () => {
    const user = await t.register();
    await t.db.updateTable('users').set({ email_verified: true }).where('id', '=', user.id).execute();
    const key = await t.clientFor(user.access).POST('/api/auth/api-keys', { body: { name: 'Mine' } });
    expect((await t.post('/api/auth/email-code', { email: user.email })).status).toBe(202);
    await t.app.services.emailCode.settled();
    const [mail] = await mailsTo(user.email, 'Your sign-in code');
    expect((await t.post('/api/auth/email-code/verify', { email: user.email, code: codeIn(mail) })).status).toBe(200);
    expect((await t.get('/api/auth/me', { token: key.data!.data.key })).status).toBe(200);
    expect((await t.post('/api/auth/login/json', { email: user.email, password: user.password })).status).toBe(200);
    expect((await t.get('/api/auth/me', { token: user.access })).status).toBe(200);
    expect(await mailsTo(user.email, CLAIMED_SUBJECT)).toEqual([]);
  });
});
