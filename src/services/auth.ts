import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Config } from '../config';
import { conflict, forbidden, invalidCredentials, tokenExpired, unauthorized } from '../http/errors';
import { findAuthenticatedUser, insertSession, revokeSession, revokeUserSessions, rotateRefreshToken } from '../db/sessions';
import type { Database, Executor, UserRow } from '../db/types';
import { findUserByEmail, insertUser } from '../db/users';
import type { AccountMail } from './account-mail';
import type { LoginGuard } from './login-guard';
import { checkNewPassword, type PasswordHasher } from './passwords';
import { sha256, type IssuedPair, type TokenService } from './tokens';

/** Who is calling: the user and the session their access token belongs to. */
export interface Principal {
  user: UserRow;
  sessionId: string;
}

/** Where a request comes from, kept on the sessions it opens. */
export interface ClientInfo {
  ip: string | null;
  userAgent: string | null;
}

export type TokenPair = Omit<IssuedPair, 'refreshTokenHash' | 'refreshExpiresAt'>;

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
    /** Per-account lockout after repeated failed logins; absent when rate limiting is off. */
    private readonly loginGuard?: LoginGuard,
  ) {
    void passwords.dummyHash();
  }

  async register(input: { email: string; password: string; name: string }, client: ClientInfo) {
    checkNewPassword(input.password, 'body.password', input.email);
    const passwordHash = await this.passwords.hash(input.password);
    const registered = await this.db.transaction().execute(async (trx) => {
      const user = await insertUser(trx, {
        email: normalizeEmail(input.email),
        name: input.name.trim(),
        password_hash: passwordHash,
        role: 'user',
      });
      if (!user) throw conflict('Email already registered');
      const tokens = await this.openSession(trx, user, client);
      await this.mail.sendVerification(trx, user);
      return { user, tokens };
    });
    this.mail.flush();
    return registered;
  }

  /** Checks credentials; never says which half was wrong. */
  async login(email: string, password: string, client: ClientInfo) {
    await this.loginGuard?.check(email);
    const user = await findUserByEmail(this.db, normalizeEmail(email));
    // An unknown e-mail costs the same bcrypt work as a wrong password.
    const valid = await this.passwords.verify(password, user?.password_hash);
    if (!user || !valid || user.deleted_at !== null) {
      await this.loginGuard?.failed(email);
      throw invalidCredentials();
    }
    await this.loginGuard?.succeeded(email);
    if (!user.is_active) throw forbidden('Account is disabled');
    const tokens = await this.openSession(this.db, user, client);
    return { user, tokens };
  }

  /** Rotates a refresh token; a rotated token presented after the grace period revokes its session. */
  async refresh(refreshToken: string): Promise<TokenPair> {
    const verified = this.tokens.verify(refreshToken, 'refresh');
    if (!verified.ok) throw verified.reason === 'expired' ? tokenExpired() : unauthorized();
    const userId = Number(verified.claims.sub);
    const sessionId = verified.claims.sid;
    const next = this.tokens.issueRefresh(userId, sessionId);
    const user = await this.db.transaction().execute(async (trx) => {
      const rotated = await rotateRefreshToken(trx, {
        sessionId,
        presentedHash: sha256(refreshToken),
        newHash: next.hash,
        expiresAt: next.expiresAt,
        graceSeconds: this.config.refreshReuseGraceSeconds,
      });
      if (rotated?.id === userId) return rotated;
      // A well-signed token that is neither current nor within grace: treat it as stolen.
      await revokeSession(trx, sessionId);
      return undefined;
    });
    if (!user) throw unauthorized();
    return {
      access_token: this.tokens.issueAccess(user, sessionId),
      refresh_token: next.token,
      token_type: 'bearer',
      expires_in: this.tokens.accessTtlSeconds,
    };
  }

  /** The principal behind an access token, or the 401 that explains why there is none. */
  async authenticate(accessToken: string): Promise<Principal> {
    const verified = this.tokens.verify(accessToken, 'access');
    if (!verified.ok) throw verified.reason === 'expired' ? tokenExpired() : unauthorized();
    const user = await findAuthenticatedUser(this.db, Number(verified.claims.sub), verified.claims.sid);
    if (!user) throw unauthorized();
    return { user, sessionId: verified.claims.sid };
  }

  async logout(principal: Principal, all: boolean): Promise<void> {
    if (all) await revokeUserSessions(this.db, principal.user.id);
    else await revokeSession(this.db, principal.sessionId);
  }

  private async openSession(db: Executor, user: UserRow, client: ClientInfo): Promise<TokenPair> {
    const sessionId = randomUUID();
    const issued = this.tokens.issuePair(user, sessionId);
    await insertSession(db, {
      id: sessionId,
      user_id: user.id,
      refresh_token_hash: issued.refreshTokenHash,
      expires_at: issued.refreshExpiresAt,
      ip: client.ip,
      user_agent: client.userAgent?.slice(0, 512) ?? null,
    });
    return strip(issued);
  }

}

function strip({ refreshTokenHash: _h, refreshExpiresAt: _e, ...pair }: IssuedPair): TokenPair {
  return pair;
}
