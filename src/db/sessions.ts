import { CompiledQuery, sql } from 'kysely';
import { preparedStatement } from './prepared';
import type { AssuranceLevel, Executor, NewSessionRow, SessionRow, UserRow } from './types';

export function insertSession(db: Executor, row: NewSessionRow): Promise<SessionRow> {
  return db.insertInto('sessions').values(row).returningAll().executeTakeFirstOrThrow();
}

/**
 * The user behind an access token, in one round trip: the user must exist, be active and not
 * deleted, and the session must be theirs, live and unexpired.
 */
export async function findAuthenticatedUser(db: Executor, userId: number, sessionId: string): Promise<UserRow | undefined> {
  // Every authenticated request runs this: its SQL is written once rather than built and compiled per
  // call, and PostgreSQL prepares it once per connection.
  const result = await db.executeQuery<UserRow>(CompiledQuery.raw(AUTHENTICATED_USER_SQL, [userId, sessionId]));
  return result.rows[0];
}

const AUTHENTICATED_USER_SQL = preparedStatement(
  'authenticated_user',
  `select users.id, users.email, users.name, users.password_hash, users.role, users.is_active, users.email_verified, users.pending_email,
         users.created_at, users.updated_at, users.deleted_at
  from users join sessions on sessions.user_id = users.id
  where users.id = $1 and users.deleted_at is null and users.is_active
    and sessions.id = $2 and sessions.revoked_at is null and sessions.expires_at > now()`,
);

/** When a session was opened, or undefined for an unknown one. */
export async function findSessionCreatedAt(db: Executor, sessionId: string): Promise<Date | undefined> {
  const row = await db.selectFrom('sessions').select('created_at').where('id', '=', sessionId).executeTakeFirst();
  return row?.created_at;
}

/** Grace answers kept per rotation; one more within the grace period is taken for a stolen token. */
const MAX_GRACE_TOKENS = 16;

export interface Rotation {
  sessionId: string;
  presentedHash: string;
  newHash: string;
  expiresAt: Date;
  graceSeconds: number;
}

/**
 * Swaps the session's refresh token atomically and returns the session's user, or undefined when
 * the token is not (or no longer) acceptable or the user may not sign in.
 *
 * The current token (or a grace token, below) rotates: it becomes the previous one and the new
 * token becomes current. The previous token is accepted again only within the grace period after
 * that rotation, as when several tabs refresh at once; the token it gets is kept as a grace
 * token, valid beside the current one, so whichever answer a client keeps still works until the
 * next rotation.
 */
export async function rotateRefreshToken(db: Executor, r: Rotation): Promise<UserRow | undefined> {
  const liveSession = () =>
    db
      .updateTable('sessions')
      .from('users')
      .whereRef('users.id', '=', 'sessions.user_id')
      .where('sessions.id', '=', r.sessionId)
      .where('sessions.revoked_at', 'is', null)
      .where('sessions.expires_at', '>', sql<Date>`now()`)
      .where('users.deleted_at', 'is', null)
      .where('users.is_active', '=', true)
      .returningAll('users');

  const rotated = await liveSession()
    .set({
      previous_token_hash: r.presentedHash,
      refresh_token_hash: r.newHash,
      grace_token_hashes: sql`'{}'`,
      rotated_at: sql`now()`,
      last_used_at: sql`now()`,
      expires_at: r.expiresAt,
    })
    .where((eb) =>
      eb.or([eb('sessions.refresh_token_hash', '=', r.presentedHash), sql<boolean>`${r.presentedHash} = any(sessions.grace_token_hashes)`]),
    )
    .executeTakeFirst();
  if (rotated) return rotated;

  // Every grace answer's token is kept: with several tabs reusing the token at once, each answer's
  // token must stay valid, not only the last one written. Bounded, so a stolen token cannot grow it.
  const withinGrace = await liveSession()
    .set({
      grace_token_hashes: sql`array_append(sessions.grace_token_hashes, ${r.newHash}::text)`,
      last_used_at: sql`now()`,
      expires_at: r.expiresAt,
    })
    .where('sessions.previous_token_hash', '=', r.presentedHash)
    .where(sql<number>`cardinality(sessions.grace_token_hashes)`, '<', MAX_GRACE_TOKENS)
    .where('sessions.rotated_at', '>', sql<Date>`now() - make_interval(secs => ${r.graceSeconds})`)
    .executeTakeFirst();
  return withinGrace;
}

export async function revokeSession(db: Executor, sessionId: string): Promise<void> {
  await db
    .updateTable('sessions')
    .set({ revoked_at: sql`now()` })
    .where('id', '=', sessionId)
    .where('revoked_at', 'is', null)
    .execute();
}

/** Revokes every live session of a user, but `exceptSessionId` when given. */
export async function revokeUserSessions(db: Executor, userId: number, exceptSessionId?: string): Promise<void> {
  let q = db
    .updateTable('sessions')
    .set({ revoked_at: sql`now()` })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null);
  if (exceptSessionId) q = q.where('id', '!=', exceptSessionId);
  await q.execute();
}

/** The user's sessions that are neither revoked nor expired, newest first. */
export function listLiveSessions(db: Executor, userId: number): Promise<SessionRow[]> {
  return db
    .selectFrom('sessions')
    .selectAll()
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .orderBy('created_at', 'desc')
    .orderBy('id')
    .execute();
}

/** Revokes one live session of the user; false when the user has no such session. */
export async function revokeOwnSession(db: Executor, userId: number, sessionId: string): Promise<boolean> {
  const live = { id: sessionId, user_id: userId, revoked_at: null };
  const revoked = await db
    .updateTable('sessions')
    .set({ revoked_at: sql`now()` })
    .where((eb) => eb.and(live))
    .where('expires_at', '>', sql<Date>`now()`)
    .returning('id')
    .executeTakeFirst();
  return revoked !== undefined;
}

/** How a session was signed in: undefined for an unknown session. */
export function findSessionAssurance(db: Executor, sessionId: string): Promise<{ amr: string[]; aal: AssuranceLevel } | undefined> {
  return db.selectFrom('sessions').select(['amr', 'aal']).where('id', '=', sessionId).executeTakeFirst();
}

/** Raises a session's assurance once a second factor has been shown in it. */
export async function raiseSessionAssurance(db: Executor, sessionId: string, amr: string[], aal: AssuranceLevel): Promise<void> {
  await db.updateTable('sessions').set({ amr, aal }).where('id', '=', sessionId).execute();
}
