import { randomUUID } from 'node:crypto';
import { insertSession } from './session-repository.js';
import type { Executor, UserRow } from '../db/types.js';
import type { ClientInfo } from '../principal.js';
import { PASSWORD_ONLY, type Assurance, type IssuedPair, type OrganizationClaims, type TokenService } from './tokens.js';

/** The tokens of a session as its holder gets them. */
export type TokenPair = Omit<IssuedPair, 'refreshTokenHash' | 'refreshExpiresAt'>;

/**
 * Opens a session for the user, signed in as `assurance` says and authenticated now, and issues its
 * token pair; the session keeps only the refresh token's hash.
 */
export async function openSession(
  db: Executor,
  tokens: TokenService,
  user: UserRow,
  client: ClientInfo,
  assurance: Assurance = PASSWORD_ONLY,
  /** The upstream provider (its slug) the user signed in with. */
  provider: string | null = null,
  /** The organisation the session acts for, the membership already checked. */
  organization?: OrganizationClaims,
): Promise<{ sessionId: string; tokens: TokenPair }> {
  const sessionId = randomUUID();
  // The sign-in that opens a session is its holder's latest proof of who they are.
  const authenticatedAt = new Date();
  const { refreshTokenHash, refreshExpiresAt, ...pair } = tokens.issuePair(user, sessionId, authenticatedAt, assurance, organization);
  await insertSession(db, {
    id: sessionId,
    user_id: user.id,
    refresh_token_hash: refreshTokenHash,
    expires_at: refreshExpiresAt,
    ip: client.ip,
    user_agent: client.userAgent,
    amr: [...assurance.amr],
    aal: assurance.aal,
    provider,
    authenticated_at: authenticatedAt,
    organization_id: organization?.org_id ?? null,
  });
  return { sessionId, tokens: pair };
}
