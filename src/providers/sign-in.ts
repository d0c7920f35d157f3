import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { RedirectConfig, SessionConfig } from '../config/index.js';
import { findProvider, findProviderById, type IdentityProviderRow } from './provider-repository.js';
import {
  findCodeById,
  findIdentity,
  insertCode,
  insertFlow,
  insertIdentity,
  recordIdentityUse,
  takeCode,
  takeFlow,
  type ProviderCodeRow,
} from './identity-repository.js';
import type { Transact, UnitOfWork } from '../db/transaction.js';
import type { Database, UserRow } from '../db/types.js';
import { findUserByEmail, findUserById, insertUser, markPasswordUnknown } from '../users/user-repository.js';
import type { ProviderAddressProof } from '../email-code/provider-address.js';
import {
  Conflict,
  EmailVerificationRequired,
  Forbidden,
  InvalidCode,
  InvalidRedirect,
  InvalidToken,
  MfaRequired,
  NotFound,
} from '../errors.js';
import { seal, unseal } from '../infra/sealed.js';
import type { MailboxClaim } from '../mailbox/claim.js';
import { allowedRedirect } from '../redirects/allow-list.js';
import type { AccountMail } from '../mail/account-mail.js';
import { recordEvent } from '../audit/audit-events.js';
import { emailNotVerified, type SecondFactorGate } from '../sessions/auth.js';
import { countedCheck, type LoginGuard } from '../sessions/login-guard.js';
import type { ClientInfo, Principal } from '../principal.js';
import type { PasswordHasher } from '../passwords/passwords.js';
import { openSession, type TokenPair } from '../sessions/session-start.js';
import { joinByDomain, refuseUnlessSso } from '../organizations/domain-policy.js';
import { sha256, type Assurance, type TokenService } from '../sessions/tokens.js';
import { providerSealingKey, type IdentityProviderRegistry } from './registry.js';
import { ProviderUnreachable, type Upstream, type UpstreamProfile } from './upstream.js';

/** How long a sign-in may stay at the provider. */
export const FLOW_TTL_MS = 10 * 60 * 1000;
/** How long the application has to exchange its code. */
export const CODE_TTL_MS = 5 * 60 * 1000;

/** What the callback tells the application at `redirect_to` when there is no code. */
export type SignInError =
  | 'access_denied'
  | 'account_exists'
  | 'signup_disabled'
  | 'account_disabled'
  | 'provider_disabled'
  | 'invalid_response'
  | 'temporarily_unavailable'
  | 'identity_in_use';

const DESCRIPTIONS: Record<SignInError, string> = {
  access_denied: 'The sign-in was declined at the provider',
  account_exists: 'An account with this e-mail address exists; sign in to it and link the provider from there',
  signup_disabled: 'No account is linked to this identity, and this provider does not create accounts',
  account_disabled: 'The account is disabled',
  provider_disabled: 'This provider is not enabled',
  invalid_response: 'The provider answer failed a check',
  temporarily_unavailable: 'The provider could not be reached; try again later',
  identity_in_use: 'This identity is already linked to another account',
};

/** Fields of a provider's answer that are not the authorization response's own (Apple's form post sends them beside it). */
const NOT_THE_ANSWER = new Set(['user', 'id_token']);

/** A signed-in person by provider: no password was used, and none was shown (`fed`, as RFC 8176 lists for federated sign-ins). */
const FEDERATED: Assurance = Object.freeze({ amr: Object.freeze(['fed']), aal: 'aal1' });

class Refusal extends Error {
  constructor(readonly code: SignInError) {
    super(DESCRIPTIONS[code]);
  }
}

/** The application's side of a sign-in or a link: where to come back, and its PKCE challenge. */
export interface AuthorizeRequest {
  redirectTo: string;
  codeChallenge: string;
}

export interface SignInOptions {
  /** Tells the account's address of an identity linked to it. */
  mail: AccountMail;
  redirects: RedirectConfig;
  sessions: SessionConfig;
  secretKey: string;
  /** Proves, with a mailed code, an address the provider gave without vouching for it. */
  addressProof: ProviderAddressProof;
  /** Hands an account whose address was never verified to whoever proves its mailbox. */
  mailbox: MailboxClaim;
  loginGuard?: LoginGuard;
  secondFactor?: SecondFactorGate;
}

/**
 * Signing in with an upstream provider, for an application that never sees a token in a URL: PKCE
 * from the application to the service, a one-time code at an allowed `redirect_to`, and its
 * exchange for a session, with the second factor and the lockout of a password login.
 */
export class ProviderSignIn {
  private readonly key: Buffer;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly transact: Transact,
    private readonly registry: IdentityProviderRegistry,
    private readonly upstream: Upstream,
    private readonly tokens: TokenService,
    private readonly passwords: PasswordHasher,
    private readonly options: SignInOptions,
  ) {
    this.key = providerSealingKey(options.secretKey);
  }

  /** Where to send the browser: the provider's authorization URL, or back with an error. */
  authorize(slug: string, request: AuthorizeRequest, client: ClientInfo): Promise<string> {
    return this.begin(slug, request, client, null);
  }

  /**
   * Where to send the browser of a signed-in user linking a provider to their account: as a
   * sign-in, but the code it ends with links the identity to this user when the application that
   * asked exchanges it, rather than signing anyone in by the identity.
   */
  startLink(principal: Principal, slug: string, request: AuthorizeRequest): Promise<string> {
    return this.begin(slug, request, principal.client, principal.user.id);
  }

  private async begin(slug: string, request: AuthorizeRequest, client: ClientInfo, linkUserId: number | null): Promise<string> {
    const provider = await findProvider(this.db, slug);
    if (!provider || !provider.enabled) throw new NotFound('Identity provider not found');
    const back = allowedRedirect(this.options.redirects, request.redirectTo);
    if (!back) throw new InvalidRedirect();
    const state = randomToken();
    const nonce = provider.kind === 'oidc' ? randomToken() : undefined;
    const codeVerifier = randomToken();
    let url: URL;
    try {
      url = await this.upstream.authorizationUrl(provider, this.registry.clientSecret(provider), {
        redirectUri: callbackUri(client, slug),
        state,
        nonce,
        codeVerifier,
      });
    } catch (error) {
      if (error instanceof ProviderUnreachable) return withError(back, 'temporarily_unavailable');
      throw error;
    }
    await insertFlow(this.db, {
      provider_id: provider.id,
      state_hash: sha256(state),
      nonce: nonce ?? null,
      code_verifier_sealed: seal(this.key, codeVerifier),
      redirect_to: back.href,
      code_challenge: request.codeChallenge,
      link_user_id: linkUserId,
      expires_at: new Date(Date.now() + FLOW_TTL_MS),
    });
    return url.href;
  }

  /**
   * The provider's redirect (its query, or the form it had the browser post): takes the sign-in
   * under way its `state` names (once), finds or makes the person's account (or, for a link, checks
   * that the identity is free for the user who asked), and sends the browser back with a one-time
   * code, or with an error.
   */
  async callback(slug: string, query: Record<string, string | undefined>, client: ClientInfo): Promise<string> {
    const flow = query.state ? await takeFlow(this.db, sha256(query.state)) : undefined;
    const provider = flow && (await findProvider(this.db, slug));
    if (!flow || !provider || provider.id !== flow.provider_id) throw new InvalidToken();
    const back = new URL(flow.redirect_to);
    const linkUserId = flow.link_user_id;
    const refuse = async (code: SignInError, subject: number | null = null) => {
      const details = { reason: code, provider: slug };
      await this.transact((trx) =>
        linkUserId === null
          ? recordEvent(trx, { type: 'login.failed', actor: null, subject, details, origin: client })
          : recordEvent(trx, { type: 'identity.link_failed', actor: linkUserId, subject: linkUserId, details, origin: client }),
      );
      return withError(back, code);
    };
    if (!provider.enabled) return refuse('provider_disabled');
    if (query.error !== undefined) return refuse(query.error === 'access_denied' ? 'access_denied' : 'invalid_response');

    let profile: UpstreamProfile;
    try {
      const answer = new URL(callbackUri(client, slug));
      for (const [name, value] of Object.entries(query))
        if (value !== undefined && !NOT_THE_ANSWER.has(name)) answer.searchParams.set(name, value);
      profile = await this.upstream.complete(provider, this.registry.clientSecret(provider), answer, {
        state: query.state!,
        nonce: flow.nonce ?? undefined,
        codeVerifier: unseal(this.key, flow.code_verifier_sealed)!,
      });
    } catch (error) {
      return refuse(error instanceof ProviderUnreachable ? 'temporarily_unavailable' : 'invalid_response');
    }

    // An admin may take the provider's address as verified even where the provider does not say so.
    if (provider.trust_email) profile = { ...profile, emailVerified: true };
    const code = randomToken();
    try {
      await this.transact(async (trx) => {
        const { user, linkLater } =
          linkUserId === null
            ? { user: await this.accountFor(trx, provider, profile, client), linkLater: false }
            : await this.linkTo(trx, linkUserId, provider, profile);
        // No user: the address waits for its mailed code, and the code carries the identity until then.
        const carried = linkLater || user === undefined;
        await insertCode(trx, {
          code_hash: sha256(code),
          user_id: user?.id ?? null,
          provider_id: provider.id,
          code_challenge: flow.code_challenge,
          link_subject: carried ? profile.subject : null,
          link_email: carried ? (profile.email ?? null) : null,
          link_name: user === undefined ? (profile.name ?? null) : null,
          expires_at: new Date(Date.now() + CODE_TTL_MS),
        });
      });
    } catch (error) {
      if (error instanceof Refusal) return refuse(error.code, (error as Refusal & { subject?: number }).subject ?? null);
      throw error;
    }
    this.options.mailbox.flush();
    this.options.mail.flush();
    back.searchParams.set('code', code);
    return back.href;
  }

  /**
   * The application's code and PKCE verifier, for a session: as a password login, second factor
   * included. A link's code first links its identity to the user who asked: only the application
   * holding the verifier of that request completes it, not a browser that was sent its address.
   */
  async exchange(code: string, codeVerifier: string, client: ClientInfo): Promise<{ user: UserRow; tokens: TokenPair }> {
    const issued = await takeCode(this.db, sha256(code));
    const provider = issued && (await this.providerById(issued.provider_id));
    if (!issued || !provider) throw new InvalidCode();
    if (issued.user_id === null) return this.askForAddressProof(issued, provider, codeVerifier, client);
    const user = await findUserById(this.db, issued.user_id);
    if (!user) throw new InvalidCode();
    const fail = (reason: string, locked?: string) => this.recordFailure(user.id, provider, reason, client, locked);
    const { valid, locked } = await countedCheck(this.options.loginGuard, user.email, client.ip, () =>
      Promise.resolve(sameText(s256(codeVerifier), issued.code_challenge)),
    );
    if (!valid) {
      await fail('wrong_code_verifier', locked);
      throw new InvalidCode();
    }
    if (user.deleted_at !== null || !user.is_active) {
      await fail('account_disabled');
      throw new Forbidden('Account is disabled');
    }
    if (issued.link_subject !== null) {
      const profile = { subject: issued.link_subject, email: issued.link_email ?? undefined, emailVerified: false, name: undefined };
      if (!(await this.completeLink(user, provider, profile, client))) throw new Conflict(DESCRIPTIONS.identity_in_use);
    }
    return this.signIn(user, provider, client);
  }

  /**
   * The code and the application's verification token of a sign-in whose address the provider did
   * not vouch for: the mailbox is proven, so the identity now signs in as one with a verified
   * address would (joining the account that holds the address, claiming it if that account's
   * address was never verified, or making one), and the session opens.
   */
  async verifyAddress(verificationToken: string, code: string, client: ClientInfo): Promise<{ user: UserRow; tokens: TokenPair }> {
    const spent = await this.options.addressProof.spend(verificationToken, code, client);
    const waiting = spent.provider_code_id === null ? undefined : await findCodeById(this.db, spent.provider_code_id);
    const provider = waiting && (await this.providerById(waiting.provider_id));
    if (!waiting || !provider || waiting.link_subject === null || waiting.link_email === null) throw new InvalidCode();
    const profile: UpstreamProfile = {
      subject: waiting.link_subject,
      email: waiting.link_email,
      emailVerified: true,
      name: waiting.link_name ?? undefined,
    };
    let user: UserRow | undefined;
    try {
      if (!provider.enabled) throw new Refusal('provider_disabled');
      user = await this.transact((trx) => this.accountFor(trx, provider, profile, client));
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      await this.recordFailure((error as Refusal & { subject?: number }).subject ?? null, provider, error.code, client);
      throw new Forbidden(error.message);
    }
    this.options.mailbox.flush();
    if (!user) throw new InvalidCode();
    return this.signIn(user, provider, client);
  }

  /**
   * A code that carries an identity whose address waits for proof: once the application's verifier
   * matches, a code is mailed to the address and the answer is the token to send it back with.
   */
  private async askForAddressProof(
    issued: ProviderCodeRow,
    provider: IdentityProviderRow,
    codeVerifier: string,
    client: ClientInfo,
  ): Promise<never> {
    const email = issued.link_email;
    if (email === null || issued.link_subject === null) throw new InvalidCode();
    const holder = await findUserByEmail(this.db, email);
    const { valid, locked } = await countedCheck(this.options.loginGuard, email, client.ip, () =>
      Promise.resolve(sameText(s256(codeVerifier), issued.code_challenge)),
    );
    if (!valid) {
      await this.recordFailure(holder?.id ?? null, provider, 'wrong_code_verifier', client, locked);
      throw new InvalidCode();
    }
    const { addressProof } = this.options;
    const token = await this.transact((trx) =>
      addressProof.send(
        trx,
        {
          email,
          name: issued.link_name ?? holder?.name ?? email.slice(0, email.lastIndexOf('@')),
          provider: { slug: provider.slug, name: provider.name },
          providerCodeId: issued.id,
          userId: holder?.id ?? null,
        },
        client,
      ),
    );
    addressProof.flush();
    throw new EmailVerificationRequired(token);
  }

  private recordFailure(subject: number | null, provider: IdentityProviderRow, reason: string, client: ClientInfo, locked?: string) {
    return this.transact(async (trx) => {
      await recordEvent(trx, { type: 'login.failed', actor: null, subject, details: { reason, provider: provider.slug }, origin: client });
      if (locked) await recordEvent(trx, { type: 'login.locked', actor: null, subject, details: { scope: locked }, origin: client });
    });
  }

  /** The last steps of every provider sign-in: the checks of a password login, the second factor, the session. */
  private async signIn(user: UserRow, provider: IdentityProviderRow, client: ClientInfo): Promise<{ user: UserRow; tokens: TokenPair }> {
    if (this.options.sessions.requireVerifiedEmail && !user.email_verified) {
      await this.recordFailure(user.id, provider, 'email_not_verified', client);
      throw emailNotVerified();
    }
    await refuseUnlessSso(this.db, user, provider.slug);
    const second = await this.options.secondFactor?.challenge(user, client, FEDERATED.amr, provider.slug);
    if (second) throw new MfaRequired(second.mfaToken, second.methods);
    const { tokens } = await this.transact(async (trx) => {
      // A provider that vouched for the address proved it: its organisation's people join it.
      await joinByDomain(trx, user, client);
      const opened = await openSession(trx, this.tokens, user, client, FEDERATED, provider.slug);
      await recordEvent(trx, {
        type: 'login.succeeded',
        actor: user.id,
        subject: user.id,
        details: { session_id: opened.sessionId, provider: provider.slug, amr: [...FEDERATED.amr] },
        origin: client,
      });
      return opened;
    });
    return { user, tokens };
  }

  /**
   * The account an upstream identity signs in: the one it is linked to; or, when the provider
   * vouches for the address, the account with its e-mail, linked now (an account whose address was
   * never verified is claimed first: the provider proved the mailbox); or a new account. Undefined
   * when the provider does not vouch for the address: nothing is made or linked until a mailed
   * code proves it. Throws a Refusal for anything else.
   */
  private async accountFor(
    trx: UnitOfWork,
    provider: IdentityProviderRow,
    profile: UpstreamProfile,
    client: ClientInfo,
  ): Promise<UserRow | undefined> {
    const refuse = (code: SignInError, subject?: number) => Object.assign(new Refusal(code), { subject });
    const identity = await findIdentity(trx, provider.id, profile.subject);
    if (identity) {
      const user = await findUserById(trx, identity.user_id);
      if (!user || user.deleted_at !== null || !user.is_active) throw refuse('account_disabled', user?.id);
      await recordIdentityUse(trx, identity.id, profile.email ?? null);
      return user;
    }
    if (!profile.email) throw refuse('invalid_response');
    const existing = await findUserByEmail(trx, profile.email);
    if (existing && (existing.deleted_at !== null || !existing.is_active)) throw refuse('account_disabled', existing.id);
    if (!existing && !provider.allow_signup) throw refuse('signup_disabled');
    // An address nobody has proven belongs to nobody: it makes no account and joins none yet.
    if (!profile.emailVerified) return undefined;
    if (existing) {
      // The provider proved the mailbox: an account whose address never was is its holder's now.
      const claimed = await this.options.mailbox.prove(trx, existing, 'provider', client);
      await this.link(trx, claimed, provider, profile, client, 'verified_email');
      return claimed;
    }
    // No password: nobody knows this one, and `password_set` says so; forgot-password sets a real one.
    const unusable = await this.passwords.hash(randomBytes(32).toString('base64url'));
    const user = await insertUser(trx, {
      email: profile.email,
      name: profile.name ?? profile.email.split('@')[0].slice(0, 100),
      password_hash: unusable,
      role: 'user',
      email_verified: true,
    });
    if (!user) throw refuse('account_exists');
    await markPasswordUnknown(trx, user.id);
    await recordEvent(trx, {
      type: 'user.registered',
      actor: user.id,
      subject: user.id,
      details: { provider: provider.slug },
      origin: client,
    });
    await this.link(trx, user, provider, profile, client, 'signup');
    return user;
  }

  /**
   * A link by hand, at the exchange of its code: the identity joins the user, unless another account
   * took it since the callback (false, and an `identity.link_failed` is recorded).
   */
  private async completeLink(user: UserRow, provider: IdentityProviderRow, profile: UpstreamProfile, client: ClientInfo): Promise<boolean> {
    const linked = await this.transact(async (trx) => {
      const identity = await findIdentity(trx, provider.id, profile.subject);
      if (identity ? identity.user_id === user.id : await this.link(trx, user, provider, profile, client, 'manual')) return true;
      await recordEvent(trx, {
        type: 'identity.link_failed',
        actor: user.id,
        subject: user.id,
        details: { reason: 'identity_in_use', provider: provider.slug },
        origin: client,
      });
      return false;
    });
    this.options.mail.flush();
    return linked;
  }

  /**
   * A link by hand, at the callback: the identity will join the account of the user who asked,
   * whatever e-mail the provider gives (they are signed in to both), once the application exchanges
   * the code (`linkLater`). An identity already theirs stays; another account's is refused
   * (`identity_in_use`).
   */
  private async linkTo(
    trx: UnitOfWork,
    userId: number,
    provider: IdentityProviderRow,
    profile: UpstreamProfile,
  ): Promise<{ user: UserRow; linkLater: boolean }> {
    const refuse = (code: SignInError) => Object.assign(new Refusal(code), { subject: userId });
    const user = await findUserById(trx, userId);
    if (!user || user.deleted_at !== null || !user.is_active) throw refuse('account_disabled');
    const identity = await findIdentity(trx, provider.id, profile.subject);
    if (!identity) return { user, linkLater: true };
    if (identity.user_id !== user.id) throw refuse('identity_in_use');
    await recordIdentityUse(trx, identity.id, profile.email ?? null);
    return { user, linkLater: false };
  }

  private async link(
    trx: UnitOfWork,
    user: UserRow,
    provider: IdentityProviderRow,
    profile: UpstreamProfile,
    client: ClientInfo,
    how: 'signup' | 'verified_email' | 'manual',
  ): Promise<boolean> {
    const identity = await insertIdentity(trx, {
      user_id: user.id,
      provider_id: provider.id,
      subject: profile.subject,
      email: profile.email ?? null,
    });
    // Linked meanwhile by another request: a sign-in is refused; a link by hand says so to its caller.
    if (!identity && how === 'manual') return false;
    if (!identity) throw Object.assign(new Refusal('account_exists'), { subject: user.id });
    await recordEvent(trx, {
      type: 'identity.linked',
      actor: user.id,
      subject: user.id,
      details: { provider: provider.slug, identity_id: identity.id, subject: profile.subject, how },
      origin: client,
    });
    // A new way into an account that was there before: its owner hears of it (a sign-up is no news).
    if (how !== 'signup')
      await this.options.mail.sendNewSignInMethodNotice(trx, user, { kind: 'identity', provider: provider.name }, client);
    return true;
  }

  private providerById(id: number): Promise<IdentityProviderRow | undefined> {
    return findProviderById(this.db, id);
  }
}

function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

function sameText(a: string, b: string): boolean {
  const [x, y] = [Buffer.from(a), Buffer.from(b)];
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The redirect URI registered with the provider: this service's callback for that provider. */
function callbackUri(client: ClientInfo, slug: string): string {
  return `${client.origin ?? ''}/api/auth/providers/${slug}/callback`;
}

function withError(back: URL, code: SignInError): string {
  const url = new URL(back);
  url.searchParams.set('error', code);
  url.searchParams.set('error_description', DESCRIPTIONS[code]);
  return url.href;
}
