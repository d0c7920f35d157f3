import { normalizeEmail, requestedEmail } from '../email-address.js';
import type { Kysely } from 'kysely';
import type { SessionConfig } from '../config/index.js';
import { Conflict, Forbidden, InvalidCredentials, MfaRequired, TokenExpired, Unauthorized } from '../errors.js';
import {
  findAuthenticatedUser,
  findSessionAssurance,
  findSessionCreatedAt,
  revokeOwnSession,
  revokeSession,
  revokeUserSessions,
  rotateRefreshToken,
  setSessionOrganization,
} from './session-repository.js';
import { endUserOidcRecords } from '../oidc/record-repository.js';
import { queueBackchannelLogouts } from '../oidc/backchannel-logout.js';
import type { Transact } from '../db/transaction.js';
import type { Database, Executor, UserRow } from '../db/types.js';
import { findUserByEmail, insertUser } from '../users/user-repository.js';
import { replacePasswordHash } from '../passwords/password-hash-repository.js';
import type { AccountMail } from '../mail/account-mail.js';
import { recordEvent } from '../audit/audit-events.js';
import type { BreachedPasswords } from '../passwords/breached-passwords.js';
import { countedCheck, type LoginGuard } from './login-guard.js';
import { sessionOf, type ClientInfo, type Principal } from '../principal.js';
import { checkNewPassword, clientCaller, lowerHelperThreadPriority, type PasswordHasher } from '../passwords/passwords.js';
import { openSession, type TokenPair } from './session-start.js';
import { sha256, type OrganizationClaims, type TokenService } from './tokens.js';
import { impersonationPrincipal } from '../impersonation/principal.js';
import { refuseUnlessSso, requireAnySecondFactor, requireSecondFactorFor } from '../organizations/domain-policy.js';

export type { TokenPair } from './session-start.js';

/**
 * The second step of a password login, for users with a second factor: a single-use token that
 * `POST /api/auth/mfa/verify` takes with the proof, and the methods the user can prove it with.
 */
export interface SecondFactorGate {
  /**
   * `firstAmr`: how the first step was taken (RFC 8176 values), when not with a password; `provider`:
   * the upstream provider of that first step, named by the session the second opens; `organizationId`:
   * the organisation the login named, which the session the second step opens acts for.
   */
  challenge(
    user: UserRow,
    client: ClientInfo,
    firstAmr?: readonly string[],
    provider?: string,
    organizationId?: number,
  ): Promise<{ mfaToken: string; methods: string[] } | undefined>;
}

/**
 * The organisations a session may act for: the claims of the user's membership as it is now, or
 * undefined for a non-member.
 */
export interface OrganizationMembership {
  claims(db: Executor, userId: number, organizationId: number): Promise<OrganizationClaims | undefined>;
  signInMembership(
    db: Executor,
    userId: number,
    organizationId: number,
  ): Promise<{ claims: OrganizationClaims; mfaRequired: boolean } | undefined>;
}

const DAY_MS = 24 * 60 * 60 * 1000;

export const notAMember = () => new Forbidden('You are not a member of this organization');

/** REQUIRE_VERIFIED_EMAIL's refusal: the password was right, so it may say why. */
export const emailNotVerified = () => new Forbidden('Email address must be verified before signing in; follow the link sent to it');

export class AuthService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly config: SessionConfig,
    private readonly tokens: TokenService,
    private readonly mail: AccountMail,
    private readonly passwords: PasswordHasher,
    private readonly transact: Transact,
    /** Per-account lockout after repeated failed logins; absent when rate limiting is off. */
    private readonly loginGuard?: LoginGuard,
    /** Asks users with a second factor for it before any session opens. */
    private readonly secondFactor?: SecondFactorGate,
    /** Refuses passwords known from breaches; absent unless PWNED_PASSWORDS_CHECK. */
    private readonly breached?: BreachedPasswords,
    /** Who may act for which organisation. */
    private readonly organizations?: OrganizationMembership,
  ) {
    // The first hash also starts libuv's pool, whose threads then yield to the event loop.
    void passwords.dummyHash().then(lowerHelperThreadPriority);
  }

  async register(input: { email: string; password: string; name: string }, client: ClientInfo) {
    checkNewPassword(input.password, 'body.password', input.email);
    await this.breached?.refuse(input.password, 'body.password');
    const passwordHash = await this.passwords.hash(input.password, clientCaller(client));
    const registered = await this.transact(async (trx) => {
      const user = await insertUser(trx, {
        email: normalizeEmail(input.email),
        name: input.name.trim(),
        password_hash: passwordHash,
        role: 'user',
      });
      if (!user) throw new Conflict('Email already registered');
      // With REQUIRE_VERIFIED_EMAIL no session opens until the address is verified: the account
      // exists, the verification link is on its way, and signing in comes after it.
      const opened = this.config.requireVerifiedEmail ? undefined : await this.openSession(trx, user, client);
      await this.mail.sendVerification(trx, user);
      await recordEvent(trx, {
        type: 'user.registered',
        actor: user.id,
        subject: user.id,
        details: opened ? { session_id: opened.sessionId } : {},
        origin: client,
      });
      return { user, tokens: opened?.tokens };
    });
    this.mail.flush();
    return registered;
  }

  /**
   * Checks credentials; never says which half was wrong. An address with a lookalike character is
   * malformed (a 422 on `emailField`), never another spelling of an account's.
   */
  async login(email: string, password: string, client: ClientInfo, emailField = 'body.email', organizationId?: number) {
    const address = requestedEmail(email, emailField);
    let user: UserRow | undefined;
    // The attempt is counted before the password is checked, so parallel guesses stay within the limit.
    const { valid, locked } = await countedCheck(this.loginGuard, address, client.ip, async () => {
      user = await findUserByEmail(this.db, address);
      // An unknown e-mail costs the same bcrypt work as a wrong password.
      const matches = await this.passwords.verify(password, user?.password_hash, clientCaller(client));
      return matches && user !== undefined && user.deleted_at === null;
    });
    const found = user;
    if (!valid || !found) {
      // The e-mail that was tried is not kept: people type their password into the wrong field.
      const subject = found?.id ?? null;
      await this.transact(async (trx) => {
        await recordEvent(trx, { type: 'login.failed', actor: null, subject, details: { reason: 'invalid_credentials' }, origin: client });
        if (locked) await recordEvent(trx, { type: 'login.locked', actor: null, subject, details: { scope: locked }, origin: client });
      });
      throw new InvalidCredentials();
    }
    if (!found.is_active) {
      await this.transact((trx) =>
        recordEvent(trx, { type: 'login.failed', actor: null, subject: found.id, details: { reason: 'account_disabled' }, origin: client }),
      );
      throw new Forbidden('Account is disabled');
    }
    if (this.config.requireVerifiedEmail && !found.email_verified) {
      await this.transact((trx) =>
        recordEvent(trx, {
          type: 'login.failed',
          actor: null,
          subject: found.id,
          details: { reason: 'email_not_verified' },
          origin: client,
        }),
      );
      throw emailNotVerified();
    }
    // A sign-in for an organisation its user is not a member of opens nothing; the password was right, so it may say why.
    const membership =
      organizationId === undefined ? undefined : await this.organizations?.signInMembership(this.db, found.id, organizationId);
    const organization = membership?.claims;
    if (organizationId !== undefined && !membership) {
      await this.transact((trx) =>
        recordEvent(trx, {
          type: 'login.failed',
          actor: null,
          subject: found.id,
          details: { reason: 'not_a_member', organization_id: organizationId },
          origin: client,
        }),
      );
      throw notAMember();
    }
    // The organisation of the person's domain may sign them in through its own provider only.
    await refuseUnlessSso(this.db, found);
    if (membership?.mfaRequired) await requireAnySecondFactor(this.db, found.id);
    // A hash of another algorithm or a lower cost than new ones get is replaced while the password is at hand.
    const stronger = await this.passwords.rehash(found.password_hash, password, clientCaller(client));
    const second = await this.secondFactor?.challenge(found, client, undefined, undefined, organizationId);
    if (second) {
      if (stronger) await this.transact((trx) => replacePasswordHash(trx, found.id, found.password_hash, stronger));
      throw new MfaRequired(second.mfaToken, second.methods);
    }
    const { tokens } = await this.transact(async (trx) => {
      if (stronger) await replacePasswordHash(trx, found.id, found.password_hash, stronger);
      const opened = await openSession(trx, this.tokens, found, client, undefined, null, organization);
      await recordEvent(trx, {
        type: 'login.succeeded',
        actor: found.id,
        subject: found.id,
        details: { session_id: opened.sessionId, ...(organization && { organization_id: organization.org_id }) },
        origin: client,
      });
      return opened;
    });
    await this.loginGuard?.signInCompleted(email, client.ip);
    return { user: found, tokens };
  }

  /**
   * Rotates a refresh token; a rotated token presented after the grace period revokes its session.
   * No refresh carries a session past SESSION_MAX_DAYS from its opening; after that it is over.
   * `organizationId` switches the organisation the session acts for (null: none); without it the
   * session goes on acting for the one it remembers, while its user is still a member.
   */
  async refresh(refreshToken: string, client: ClientInfo, organizationId?: number | null): Promise<TokenPair> {
    const verified = this.tokens.verify(refreshToken, 'refresh');
    if (!verified.ok) throw verified.reason === 'expired' ? new TokenExpired() : new Unauthorized();
    const userId = Number(verified.claims.sub);
    const sessionId = verified.claims.sid;
    const rotation = await this.transact(async (trx) => {
      const createdAt = await findSessionCreatedAt(trx, sessionId);
      if (createdAt === undefined) return undefined;
      const sessionEnd = new Date(createdAt.getTime() + this.config.maxDays * DAY_MS);
      if (sessionEnd.getTime() <= Date.now()) return undefined;
      const next = this.tokens.issueRefresh(userId, sessionId, sessionEnd);
      const accepted = await rotateRefreshToken(trx, {
        sessionId,
        presentedHash: sha256(refreshToken),
        newHash: next.hash,
        newSealed: this.tokens.sealRefresh(next.token),
        expiresAt: next.expiresAt,
        graceSeconds: this.config.refreshReuseGraceSeconds,
      });
      const details = { session_id: sessionId };
      // Within the grace period the answer carries the token the rotation made, not a new one.
      const answer = accepted && (accepted.rotated ? next.token : this.tokens.unsealRefresh(accepted.currentSealed));
      if (accepted?.user.id === userId && answer !== undefined) {
        const { user } = accepted;
        // Thrown, so the rotation rolls back: the session waits, intact, for the address to be verified.
        if (this.config.requireVerifiedEmail && !user.email_verified) throw emailNotVerified();
        await recordEvent(trx, { type: 'session.refreshed', actor: userId, subject: userId, details, origin: client });
        // A refresh carries the session's last authentication as it was: it proves nobody's presence.
        const signedIn = await findSessionAssurance(trx, sessionId);
        if (!signedIn) return undefined;
        const organization = await this.organizationOf(trx, user.id, sessionId, signedIn.organization_id, organizationId);
        return { user, refreshToken: answer, assurance: signedIn, authenticatedAt: signedIn.authenticated_at, organization };
      }
      // A well-signed token that is neither current nor within grace: treat it as stolen. That is
      // news only while its session is live; one already ended (by a logout, say) just stays ended.
      const wasLive = await revokeOwnSession(trx, userId, sessionId);
      if (wasLive)
        await recordEvent(trx, { type: 'session.refresh_reuse_detected', actor: null, subject: userId, details, origin: client });
      return undefined;
    });
    if (!rotation) throw new Unauthorized();
    return {
      accessToken: this.tokens.issueAccess(rotation.user, sessionId, rotation.authenticatedAt, rotation.assurance, rotation.organization),
      refreshToken: rotation.refreshToken,
      expiresInSeconds: this.tokens.accessTtlSeconds,
    };
  }

  /** The principal behind an access token, or the 401 that explains why there is none. */
  async authenticate(accessToken: string, client: ClientInfo): Promise<Principal> {
    const verified = this.tokens.verify(accessToken, 'access');
    if (!verified.ok) throw verified.reason === 'expired' ? new TokenExpired() : new Unauthorized();
    if (verified.claims.act) return impersonationPrincipal(this.db, verified.claims, client);
    const user = await findAuthenticatedUser(this.db, Number(verified.claims.sub), verified.claims.sid);
    if (!user) throw new Unauthorized();
    return { user, sessionId: verified.claims.sid, authenticatedAt: new Date(verified.claims.auth_time! * 1000), client };
  }

  async logout(principal: Principal, all: boolean): Promise<void> {
    const id = principal.user.id;
    const sessionId = sessionOf(principal);
    await this.transact(async (trx) => {
      if (all) {
        await revokeUserSessions(trx, id);
        await queueBackchannelLogouts(trx, { userId: id });
        await endUserOidcRecords(trx, id);
      } else {
        await revokeSession(trx, sessionId);
        await queueBackchannelLogouts(trx, { serviceSessionId: sessionId });
      }
      await recordEvent(trx, {
        type: 'session.logged_out',
        actor: id,
        subject: id,
        details: { session_id: sessionId, all },
        origin: principal.client,
      });
    });
  }

  /**
   * The organisation a refreshed session acts for. One asked for must be the user's (else 403, and
   * the refresh is undone); one the session remembers (`remembered`) is forgotten once the user is no
   * longer a member. Asking for the one it remembers is no switch: nothing is written.
   */
  private async organizationOf(
    trx: Executor,
    userId: number,
    sessionId: string,
    remembered: number | null,
    requested: number | null | undefined,
  ): Promise<OrganizationClaims | undefined> {
    if (requested === null) {
      if (remembered !== null) await setSessionOrganization(trx, sessionId, null);
      return undefined;
    }
    const id = requested ?? remembered;
    if (id === null) return undefined;
    const claims = await this.organizations?.claims(trx, userId, id);
    if (!claims && requested !== undefined) throw notAMember();
    const switching = requested !== undefined && requested !== remembered;
    if (claims && switching) await requireSecondFactorFor(trx, userId, id);
    if (!claims || switching) await setSessionOrganization(trx, sessionId, claims ? id : null);
    return claims;
  }

  private openSession(db: Executor, user: UserRow, client: ClientInfo): Promise<{ sessionId: string; tokens: TokenPair }> {
    return openSession(db, this.tokens, user, client);
  }
}
