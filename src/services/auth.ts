import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Config } from '../config';
import { conflict, forbidden, invalidCredentials, tokenExpired, unauthorized } from '../http/errors';
import { findAuthenticatedUser, findSessionCreatedAt, insertSession, revokeOwnSession, revokeSession, revokeUserSessions, rotateRefreshToken } from '../db/sessions';
import type { Database, Executor, UserRow } from '../db/types';
import { findUserByEmail, insertUser } from '../db/users';
import { replacePasswordHash } from '../db/password-hashes';
import type { AccountMail } from './account-mail';
import type { AuditTrail } from './audit';
import type { BreachedPasswords } from './breached-passwords';
import { countedCheck, type LoginGuard } from './login-guard';
import { checkNewPassword, lowerHelperThreadPriority, type PasswordHasher } from './passwords';
import { sha256, type IssuedPair, type TokenService } from './tokens';

/** Who is calling: the user and the session their access token belongs to. */
export interface Principal {
  user: UserRow;
  sessionId: string;
  /** The request the principal is acting through. */
  client: ClientInfo;
}

/** Where a request comes from: kept on the sessions it opens and on the audit events it causes. */
export interface ClientInfo {
  ip: string | null;
  /** At most 512 characters. */
  userAgent: string | null;
  requestId: string | null;
}

export type TokenPair = Omit<IssuedPair, 'refreshTokenHash' | 'refreshExpiresAt'>;

const DAY_MS = 24 * 60 * 60 * 1000;

/** REQUIRE_VERIFIED_EMAIL's refusal: the password was right, so it may say why. */
const emailNotVerified = () => forbidden('Email address must be verified before signing in; follow the link sent to it');

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export class AuthService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly config: Config,
    private readonly tokens: TokenService,
    private readonly mail: AccountMail,
    private readonly passwords: PasswordHasher,
    private readonly audit: AuditTrail,
    /** Per-account lockout after repeated failed logins; absent when rate limiting is off. */
    private readonly loginGuard?: LoginGuard,
    /** Refuses passwords known from breaches; absent unless PWNED_PASSWORDS_CHECK. */
    private readonly breached?: BreachedPasswords,
  ) {
    // The first hash also starts libuv's pool, whose threads then yield to the event loop.
    void passwords.dummyHash().then(lowerHelperThreadPriority);
  }

  async register(input: { email: string; password: string; name: string }, client: ClientInfo) {
    checkNewPassword(input.password, 'body.password', input.email);
    await this.breached?.refuse(input.password, 'body.password');
    const passwordHash = await this.passwords.hash(input.password);
    const registered = await this.audit.transaction(client, async (trx, record) => {
      const user = await insertUser(trx, {
        email: normalizeEmail(input.email),
        name: input.name.trim(),
        password_hash: passwordHash,
        role: 'user',
      });
      if (!user) throw conflict('Email already registered');
      // With REQUIRE_VERIFIED_EMAIL no session opens until the address is verified: the account
      // exists, the verification link is on its way, and signing in comes after it.
      const opened = this.config.requireVerifiedEmail ? undefined : await this.openSession(trx, user, client);
      await this.mail.sendVerification(trx, user);
      await record({ type: 'user.registered', actor: user.id, subject: user.id, details: opened ? { session_id: opened.sessionId } : {} });
      return { user, tokens: opened?.tokens };
    });
    this.mail.flush();
    return registered;
  }

  /** Checks credentials; never says which half was wrong. */
  async login(email: string, password: string, client: ClientInfo) {
    let user: UserRow | undefined;
    // The attempt is counted before the password is checked, so parallel guesses stay within the limit.
    const { valid, locked } = await countedCheck(this.loginGuard, email, client.ip, async () => {
      user = await findUserByEmail(this.db, normalizeEmail(email));
      // An unknown e-mail costs the same bcrypt work as a wrong password.
      const matches = await this.passwords.verify(password, user?.password_hash);
      return matches && user !== undefined && user.deleted_at === null;
    });
    const found = user as UserRow | undefined;
    if (!valid || !found) {
      // The e-mail that was tried is not kept: people type their password into the wrong field.
      const subject = found?.id ?? null;
      await this.audit.record(client, { type: 'login.failed', actor: null, subject, details: { reason: 'invalid_credentials' } });
      if (locked) await this.audit.record(client, { type: 'login.locked', actor: null, subject, details: { scope: locked } });
      throw invalidCredentials();
    }
    if (!found.is_active) {
      await this.audit.record(client, { type: 'login.failed', actor: null, subject: found.id, details: { reason: 'account_disabled' } });
      throw forbidden('Account is disabled');
    }
    if (this.config.requireVerifiedEmail && !found.email_verified) {
      await this.audit.record(client, { type: 'login.failed', actor: null, subject: found.id, details: { reason: 'email_not_verified' } });
      throw emailNotVerified();
    }
    // A hash of another algorithm or a lower cost than new ones get is replaced while the password is at hand.
    const stronger = await this.passwords.rehash(found.password_hash, password);
    const { tokens } = await this.audit.transaction(client, async (trx, record) => {
      if (stronger) await replacePasswordHash(trx, found.id, found.password_hash, stronger);
      const opened = await this.openSession(trx, found, client);
      await record({ type: 'login.succeeded', actor: found.id, subject: found.id, details: { session_id: opened.sessionId } });
      return opened;
    });
    return { user: found, tokens };
  }

  /**
   * Rotates a refresh token; a rotated token presented after the grace period revokes its session.
   * No refresh carries a session past SESSION_MAX_DAYS from its opening; after that it is over.
   */
  async refresh(refreshToken: string, client: ClientInfo): Promise<TokenPair> {
    const verified = this.tokens.verify(refreshToken, 'refresh');
    if (!verified.ok) throw verified.reason === 'expired' ? tokenExpired() : unauthorized();
    const userId = Number(verified.claims.sub);
    const sessionId = verified.claims.sid;
    const rotation = await this.audit.transaction(client, async (trx, record) => {
      const createdAt = await findSessionCreatedAt(trx, sessionId);
      if (createdAt === undefined) return undefined;
      const sessionEnd = new Date(createdAt.getTime() + this.config.sessionMaxDays * DAY_MS);
      if (sessionEnd.getTime() <= Date.now()) return undefined;
      const next = this.tokens.issueRefresh(userId, sessionId, sessionEnd);
      const rotated = await rotateRefreshToken(trx, {
        sessionId,
        presentedHash: sha256(refreshToken),
        newHash: next.hash,
        expiresAt: next.expiresAt,
        graceSeconds: this.config.refreshReuseGraceSeconds,
      });
      const details = { session_id: sessionId };
      if (rotated?.id === userId) {
        // Thrown, so the rotation rolls back: the session waits, intact, for the address to be verified.
        if (this.config.requireVerifiedEmail && !rotated.email_verified) throw emailNotVerified();
        await record({ type: 'session.refreshed', actor: userId, subject: userId, details });
        return { user: rotated, next };
      }
      // A well-signed token that is neither current nor within grace: treat it as stolen. That is
      // news only while its session is live; one already ended (by a logout, say) just stays ended.
      const wasLive = await revokeOwnSession(trx, userId, sessionId);
      if (wasLive) await record({ type: 'session.refresh_reuse_detected', actor: null, subject: userId, details });
      return undefined;
    });
    if (!rotation) throw unauthorized();
    return {
      access_token: this.tokens.issueAccess(rotation.user, sessionId),
      refresh_token: rotation.next.token,
      token_type: 'bearer',
      expires_in: this.tokens.accessTtlSeconds,
    };
  }

  /** The principal behind an access token, or the 401 that explains why there is none. */
  async authenticate(accessToken: string, client: ClientInfo): Promise<Principal> {
    const verified = this.tokens.verify(accessToken, 'access');
    if (!verified.ok) throw verified.reason === 'expired' ? tokenExpired() : unauthorized();
    const user = await findAuthenticatedUser(this.db, Number(verified.claims.sub), verified.claims.sid);
    if (!user) throw unauthorized();
    return { user, sessionId: verified.claims.sid, client };
  }

  async logout(principal: Principal, all: boolean): Promise<void> {
    const id = principal.user.id;
    await this.audit.transaction(principal.client, async (trx, record) => {
      if (all) await revokeUserSessions(trx, id);
      else await revokeSession(trx, principal.sessionId);
      await record({ type: 'session.logged_out', actor: id, subject: id, details: { session_id: principal.sessionId, all } });
    });
  }

  private async openSession(db: Executor, user: UserRow, client: ClientInfo): Promise<{ sessionId: string; tokens: TokenPair }> {
    const sessionId = randomUUID();
    const issued = this.tokens.issuePair(user, sessionId);
    await insertSession(db, {
      id: sessionId,
      user_id: user.id,
      refresh_token_hash: issued.refreshTokenHash,
      expires_at: issued.refreshExpiresAt,
      ip: client.ip,
      user_agent: client.userAgent,
    });
    return { sessionId, tokens: strip(issued) };
  }

}

function strip({ refreshTokenHash: _h, refreshExpiresAt: _e, ...pair }: IssuedPair): TokenPair {
  return pair;
}
