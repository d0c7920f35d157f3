import type { Executor } from '../db/types.js';
import { Unauthorized } from '../errors.js';
import type { ClientInfo, SessionPrincipal } from '../principal.js';
import { findAuthenticatedUser } from '../sessions/session-repository.js';
import { actorOf, type TokenClaims } from '../sessions/tokens.js';
import { findUserById } from '../users/user-repository.js';

/**
 * The principal of an access token from token exchange (`act` names the admin): the user it names,
 * acted for by the admin through the admin's session. It is refused once that session ends, once
 * the admin is no longer an admin, and once the user is disabled or deleted.
 */
export async function impersonationPrincipal(db: Executor, claims: TokenClaims, client: ClientInfo): Promise<SessionPrincipal> {
  const adminId = actorOf(claims);
  const admin = adminId === null ? undefined : await findAuthenticatedUser(db, adminId, claims.sid);
  if (!admin || admin.role !== 'admin') throw new Unauthorized();
  const user = await findUserById(db, Number(claims.sub));
  if (!user || !user.is_active || user.deleted_at !== null) throw new Unauthorized();
  return {
    user,
    sessionId: claims.sid,
    authenticatedAt: new Date(claims.auth_time! * 1000),
    impersonator: { id: admin.id },
    client: { ...client, impersonator: admin.id },
  };
}
