import { recordEvent, type RequestOrigin } from '../audit/audit-events.js';
import type { UnitOfWork } from '../db/transaction.js';
import { queueBackchannelLogouts } from '../oidc/backchannel-logout.js';
import { revokeOwnSession } from './session-repository.js';

/**
 * Revokes one live session of a user and records it, in the caller's unit of work; false when the
 * user has no such live session (another user's, revoked or expired), and then nothing is written.
 * What the OpenID Connect provider opened through the session (its provider session and the tokens
 * of that session) is found through the session's row, so it ends with it.
 */
export async function revokeUserSession(
  trx: UnitOfWork,
  revocation: { userId: number; sessionId: string; actor: number; origin: RequestOrigin },
): Promise<boolean> {
  const { userId, sessionId, actor, origin } = revocation;
  if (!(await revokeOwnSession(trx, userId, sessionId))) return false;
  // The applications that asked to be told (back-channel logout) learn that the session ended.
  await queueBackchannelLogouts(trx, { serviceSessionId: sessionId });
  await recordEvent(trx, { type: 'session.revoked', actor, subject: userId, details: { session_id: sessionId }, origin });
  return true;
}
