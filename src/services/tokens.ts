import { createHash, randomUUID } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { Config } from '../config';
import { keyRingFor, type KeyRing } from './keys';

export type TokenType = 'access' | 'refresh';

export interface TokenClaims {
  sub: string;
  type: TokenType;
  sid: string;
  jti: string;
  iat: number;
  exp: number;
  email?: string;
}

export interface IssuedPair {
  access_token: string;
  refresh_token: string;
  token_type: 'bearer';
  expires_in: number;
  /** SHA-256 of the refresh token: what the session stores instead of the token. */
  refreshTokenHash: string;
  refreshExpiresAt: Date;
}

/** Why a token was refused: `expired` only for a token that is otherwise valid. */
export type TokenFailure = 'expired' | 'invalid';

export type Verified = { ok: true; claims: TokenClaims } | { ok: false; reason: TokenFailure };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const USER_ID = /^[1-9]\d{0,9}$/;

export function sha256(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

export class TokenService {
  private readonly keys: KeyRing;
  readonly accessTtlSeconds: number;
  readonly refreshTtlSeconds: number;

  constructor(config: Config) {
    this.keys = keyRingFor(config);
    this.accessTtlSeconds = config.accessTokenExpireMinutes * 60;
    this.refreshTtlSeconds = config.refreshTokenExpireDays * 24 * 60 * 60;
  }

  issuePair(user: { id: number; email: string }, sessionId: string): IssuedPair {
    const refresh = this.issueRefresh(user.id, sessionId);
    return {
      access_token: this.issueAccess(user, sessionId),
      refresh_token: refresh.token,
      token_type: 'bearer',
      expires_in: this.accessTtlSeconds,
      refreshTokenHash: refresh.hash,
      refreshExpiresAt: refresh.expiresAt,
    };
  }

  issueAccess(user: { id: number; email: string }, sessionId: string): string {
    const now = Math.floor(Date.now() / 1000);
    return this.sign({
      sub: String(user.id), email: user.email, type: 'access', sid: sessionId, jti: randomUUID(), iat: now, exp: now + this.accessTtlSeconds,
    });
  }

  issueRefresh(userId: number, sessionId: string): { token: string; hash: string; expiresAt: Date } {
    const now = Math.floor(Date.now() / 1000);
    const exp = now + this.refreshTtlSeconds;
    const token = this.sign({ sub: String(userId), type: 'refresh', sid: sessionId, jti: randomUUID(), iat: now, exp });
    return { token, hash: sha256(token), expiresAt: new Date(exp * 1000) };
  }

  /**
   * Verifies signature, algorithm (pinned to the configured one, or to a retired key's own, chosen
   * by `kid`), expiry and the claims this service puts in its tokens. Never throws.
   */
  verify(token: string, type: TokenType): Verified {
    const verifier = this.keys.verifierFor(token);
    if (!verifier) return { ok: false, reason: 'invalid' };
    let payload: unknown;
    try {
      payload = jwt.verify(token, verifier.key, { algorithms: [verifier.algorithm] });
    } catch (error) {
      return { ok: false, reason: error instanceof jwt.TokenExpiredError ? 'expired' : 'invalid' };
    }
    const claims = payload as Partial<TokenClaims>;
    const valid =
      typeof payload === 'object' &&
      claims.type === type &&
      typeof claims.sub === 'string' && USER_ID.test(claims.sub) && Number(claims.sub) <= 2147483647 &&
      typeof claims.sid === 'string' && UUID.test(claims.sid) &&
      typeof claims.exp === 'number';
    return valid ? { ok: true, claims: claims as TokenClaims } : { ok: false, reason: 'invalid' };
  }

  private sign(claims: TokenClaims): string {
    const { key, algorithm, kid } = this.keys.signing;
    return jwt.sign(claims, key, kid === undefined ? { algorithm } : { algorithm, keyid: kid });
  }
}
