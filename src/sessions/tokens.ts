import { createHash, randomUUID } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { KeyRing, TokenConfig } from '../config/index.js';
import type { AssuranceLevel } from '../db/types.js';
import { deriveKey, seal, unseal } from '../infra/sealed.js';

export type TokenType = 'access' | 'refresh';

/**
 * The JWT header `typ` of each type (RFC 8725 §3.11, RFC 9068's `at+jwt` in spirit): a token signed
 * with the same key for another purpose (an ID token of the OpenID Connect provider, `JWT`) is
 * never taken for one of these.
 */
export const TOKEN_TYP: Readonly<Record<TokenType, string>> = Object.freeze({ access: 'access+jwt', refresh: 'refresh+jwt' });

/**
 * Refresh tokens issued before they had a `typ` of their own carry `JWT`; they are still taken until
 * they expire. Only a session's own refresh token is ever accepted (its hash is checked), so no other
 * token signed with the key could pass as one.
 */
const LEGACY_REFRESH_TYP = 'JWT';

export interface TokenClaims {
  iss: string;
  aud: string;
  sub: string;
  type: TokenType;
  sid: string;
  jti: string;
  iat: number;
  exp: number;
  /** Access tokens only, as they were when the token was issued. */
  email?: string;
  email_verified?: boolean;
  /** Access tokens only: how the session was signed in (RFC 8176) and the assurance that gives. */
  amr?: string[];
  aal?: AssuranceLevel;
  /** Access tokens only: when the session's holder last proved who they are (seconds, as OpenID Connect's `auth_time`). */
  auth_time?: number;
  /** Access tokens of a session acting for an organisation: the membership as it was when the token was issued. */
  org_id?: number;
  org_role?: string;
  org_permissions?: string[];
  /** Access tokens of an admin acting as the user (token exchange, RFC 8693 §4.1): the admin, whose session `sid` is. */
  act?: { sub: string };
}

/** What an access token says of the organisation its session acts for. */
export interface OrganizationClaims {
  org_id: number;
  org_role: string;
  org_permissions: string[];
}

/** How a session was signed in: RFC 8176 `amr` values, and the authenticator assurance level. */
export interface Assurance {
  amr: readonly string[];
  aal: AssuranceLevel;
}

/** A password alone. */
export const PASSWORD_ONLY: Assurance = Object.freeze({ amr: Object.freeze(['pwd']), aal: 'aal1' });

/** The user an access token speaks for. */
export interface TokenSubject {
  id: number;
  email: string;
  email_verified: boolean;
}

export interface IssuedPair {
  accessToken: string;
  refreshToken: string;
  /** The access token's lifetime. */
  expiresInSeconds: number;
  /** SHA-256 of the refresh token: what the session stores instead of the token. */
  refreshTokenHash: string;
  refreshExpiresAt: Date;
}

/** Why a token was refused: `expired` only for a token that is otherwise valid. */
export type TokenFailure = 'expired' | 'invalid';

export type Verified = { ok: true; claims: TokenClaims } | { ok: false; reason: TokenFailure };

/**
 * How far in the future a token's `iat` may be: the clocks of the service's own processes may
 * differ a little, but a token issued later than that would outlive its lifetime.
 */
const MAX_CLOCK_SKEW_SECONDS = 60;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const USER_ID = /^[1-9]\d{0,9}$/;

/** The admin an access token's `act` names (RFC 8693 §4.1), or null when it names none well-formed. */
export function actorOf(claims: Pick<TokenClaims, 'act' | 'sub'>): number | null {
  const actor = claims.act?.sub;
  if (typeof actor !== 'string' || !USER_ID.test(actor) || Number(actor) > 2147483647 || actor === claims.sub) return null;
  return Number(actor);
}

export function sha256(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

export class TokenService {
  private readonly keys: KeyRing;
  private readonly issuer: string;
  private readonly audience: string;
  readonly accessTtlSeconds: number;
  readonly refreshTtlSeconds: number;
  readonly impersonationTtlSeconds: number;
  private readonly sealingKey: Buffer;

  constructor(
    config: TokenConfig,
    /** SECRET_KEY, from which the key that seals a session's current refresh token is derived. */
    secretKey: string,
  ) {
    this.sealingKey = deriveKey(secretKey, 'refresh-tokens');
    this.keys = config.keys;
    this.issuer = config.issuer;
    this.audience = config.audience;
    this.accessTtlSeconds = config.accessTokenExpireMinutes * 60;
    this.refreshTtlSeconds = config.refreshTokenExpireDays * 24 * 60 * 60;
    this.impersonationTtlSeconds = config.impersonationTokenMinutes * 60;
  }

  /** `authenticatedAt`: when the session's holder last proved who they are (the session's `authenticated_at`). */
  issuePair(
    user: TokenSubject,
    sessionId: string,
    authenticatedAt: Date,
    assurance: Assurance = PASSWORD_ONLY,
    organization?: OrganizationClaims,
  ): IssuedPair {
    const refresh = this.issueRefresh(user.id, sessionId);
    return {
      accessToken: this.issueAccess(user, sessionId, authenticatedAt, assurance, organization),
      refreshToken: refresh.token,
      expiresInSeconds: this.accessTtlSeconds,
      refreshTokenHash: refresh.hash,
      refreshExpiresAt: refresh.expiresAt,
    };
  }

  /** `organization`: the claims of the organisation the session acts for, when it acts for one. */
  issueAccess(
    user: TokenSubject,
    sessionId: string,
    authenticatedAt: Date,
    assurance: Assurance = PASSWORD_ONLY,
    organization?: OrganizationClaims,
  ): string {
    const now = Math.floor(Date.now() / 1000);
    return this.sign('access', {
      iss: this.issuer,
      aud: this.audience,
      sub: String(user.id),
      email: user.email,
      email_verified: user.email_verified,
      type: 'access',
      sid: sessionId,
      jti: randomUUID(),
      iat: now,
      exp: now + this.accessTtlSeconds,
      amr: [...assurance.amr],
      aal: assurance.aal,
      auth_time: Math.floor(authenticatedAt.getTime() / 1000),
      ...(organization && {
        org_id: organization.org_id,
        org_role: organization.org_role,
        org_permissions: [...organization.org_permissions],
      }),
    });
  }

  /**
   * An access token of `user` for the admin `actorId` acting as them, through the admin's session
   * (`sid`): it lives IMPERSONATION_TOKEN_MINUTES, and no refresh token comes with it.
   */
  issueImpersonation(user: TokenSubject, actorId: number, adminSessionId: string, authenticatedAt: Date, assurance: Assurance): string {
    const now = Math.floor(Date.now() / 1000);
    return this.sign('access', {
      iss: this.issuer,
      aud: this.audience,
      sub: String(user.id),
      email: user.email,
      email_verified: user.email_verified,
      type: 'access',
      sid: adminSessionId,
      jti: randomUUID(),
      iat: now,
      exp: now + this.impersonationTtlSeconds,
      amr: [...assurance.amr],
      aal: assurance.aal,
      auth_time: Math.floor(authenticatedAt.getTime() / 1000),
      act: { sub: String(actorId) },
    });
  }

  /** A refresh token for the session, expiring after its lifetime but never after `notAfter` (the session's end). */
  issueRefresh(userId: number, sessionId: string, notAfter?: Date): { token: string; hash: string; expiresAt: Date } {
    const now = Math.floor(Date.now() / 1000);
    const exp = Math.min(now + this.refreshTtlSeconds, notAfter === undefined ? Infinity : Math.floor(notAfter.getTime() / 1000));
    const token = this.sign('refresh', {
      iss: this.issuer,
      aud: this.audience,
      sub: String(userId),
      type: 'refresh',
      sid: sessionId,
      jti: randomUUID(),
      iat: now,
      exp,
    });
    return { token, hash: sha256(token), expiresAt: new Date(exp * 1000) };
  }

  /** A refresh token sealed for the session row, which otherwise keeps only hashes. */
  sealRefresh(token: string): string {
    return seal(this.sealingKey, token);
  }

  /** The sealed refresh token, or undefined when it was sealed under another SECRET_KEY. */
  unsealRefresh(sealed: string): string | undefined {
    return unseal(this.sealingKey, sealed);
  }

  /**
   * Verifies the header's `typ` (TOKEN_TYP), signature, algorithm (pinned to the configured one, or to
   * a retired key's own, chosen by `kid`), issuer, audience, expiry, age and the claims this service
   * puts in its tokens. A
   * token older than its type's lifetime counts as expired whatever its `exp` says, so a token
   * signed with a longer lifetime (by another holder of an HS* secret, or under an earlier
   * setting) lasts no longer than the service's own. Never throws.
   */
  verify(token: string, type: TokenType): Verified {
    const verifier = this.keys.verifierFor(token);
    if (!verifier) return { ok: false, reason: 'invalid' };
    let complete: jwt.Jwt;
    try {
      complete = jwt.verify(token, verifier.key, {
        algorithms: [verifier.algorithm],
        issuer: this.issuer,
        audience: this.audience,
        // The longer of the two access lifetimes here; an access token without `act` is held to its own below.
        maxAge: type === 'access' ? Math.max(this.accessTtlSeconds, this.impersonationTtlSeconds) : this.refreshTtlSeconds,
        complete: true,
      });
    } catch (error) {
      return { ok: false, reason: error instanceof jwt.TokenExpiredError ? 'expired' : 'invalid' };
    }
    const { header, payload } = complete;
    const typ = header.typ;
    if (typ !== TOKEN_TYP[type] && !(type === 'refresh' && typ === LEGACY_REFRESH_TYP)) return { ok: false, reason: 'invalid' };
    const claims = payload as Partial<TokenClaims>;
    const valid =
      typeof payload === 'object' &&
      claims.type === type &&
      typeof claims.iat === 'number' &&
      claims.iat <= Date.now() / 1000 + MAX_CLOCK_SKEW_SECONDS &&
      typeof claims.sub === 'string' &&
      USER_ID.test(claims.sub) &&
      Number(claims.sub) <= 2147483647 &&
      typeof claims.sid === 'string' &&
      UUID.test(claims.sid) &&
      typeof claims.exp === 'number' &&
      (type === 'refresh' || typeof claims.auth_time === 'number') &&
      (claims.act === undefined || (type === 'access' && actorOf(claims as TokenClaims) !== null));
    // Each kind of access token lasts no longer than its own lifetime, whatever its `exp` says.
    const lifetime = claims.act === undefined ? this.accessTtlSeconds : this.impersonationTtlSeconds;
    if (valid && type === 'access' && claims.iat! + lifetime < Date.now() / 1000) return { ok: false, reason: 'expired' };
    return valid ? { ok: true, claims: claims as TokenClaims } : { ok: false, reason: 'invalid' };
  }

  private sign(type: TokenType, claims: TokenClaims): string {
    const { key, algorithm, kid } = this.keys.signing;
    const header = { alg: algorithm, typ: TOKEN_TYP[type] };
    return jwt.sign(claims, key, kid === undefined ? { algorithm, header } : { algorithm, keyid: kid, header });
  }
}
