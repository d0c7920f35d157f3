import { CompiledQuery, sql } from 'kysely';
import { preparedStatement } from '../db/prepared.js';
import type { AssuranceLevel, Executor, NewSessionRow, SessionRow, UserRow } from '../db/types.js';

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

export interface Rotation {
  sessionId: string;
  presentedHash: string;
  newHash: string;
  /** The new token, sealed: what an answer within the grace period of this rotation hands out. */
  newSealed: string;
  expiresAt: Date;
  graceSeconds: number;
}

/** A refresh the session accepts: rotated, or answered within the grace period with the current token (sealed). */
export type Accepted = { user: UserRow; rotated: true } | { user: UserRow; rotated: false; currentSealed: string };

/**
 * Swaps the session's refresh token atomically, or undefined when the token is not (or no longer)
 * acceptable or the user may not sign in.
 *
 * The current token rotates: it becomes the previous one and the new token becomes current. The
 * previous token is accepted again only within the grace period after that rotation, as when
 * several tabs refresh at once; such a refresh does not rotate but is answered with the token the
 * rotation made, so every tab goes on with the one current token and the next round races the
 * same way instead of presenting a token that looks stolen.
 */
export async function rotateRefreshToken(db: Executor, r: Rotation): Promise<Accepted | undefined> {
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
      refresh_token_sealed: r.newSealed,
      grace_token_hashes: sql`'{}'`,
      rotated_at: sql`now()`,
      last_used_at: sql`now()`,
      expires_at: r.expiresAt,
    })
    .where((eb) =>
      eb.or([eb('sessions.refresh_token_hash', '=', r.presentedHash), sql<boolean>`${r.presentedHash} = any(sessions.grace_token_hashes)`]),
    )
    .executeTakeFirst();
  if (rotated) return { user: rotated, rotated: true };

  // Read, not written: the rotation just set what an update would, and every tab of a burst reads at once.
  const withinGrace = await db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .selectAll('users')
    .select('sessions.refresh_token_sealed')
    .where('sessions.id', '=', r.sessionId)
    .where('sessions.revoked_at', 'is', null)
    .where('sessions.expires_at', '>', sql<Date>`now()`)
    .where('users.deleted_at', 'is', null)
    .where('users.is_active', '=', true)
    .where('sessions.previous_token_hash', '=', r.presentedHash)
    .where('sessions.refresh_token_sealed', 'is not', null)
    .where('sessions.rotated_at', '>', sql<Date>`now() - make_interval(secs => ${r.graceSeconds})`)
    .executeTakeFirst();
  if (!withinGrace) return undefined;
  const { refresh_token_sealed: currentSealed, ...user } = withinGrace;
  return currentSealed === null ? undefined : { user, rotated: false, currentSealed };
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

/** How a session was signed in, when its holder last proved who they are, and the organisation it acts for: undefined for an unknown session. */
export function findSessionAssurance(
  db: Executor,
  sessionId: string,
): Promise<{ amr: string[]; aal: AssuranceLevel; authenticated_at: Date; organization_id: number | null } | undefined> {
  return db
    .selectFrom('sessions')
    .select(['amr', 'aal', 'authenticated_at', 'organization_id'])
    .where('id', '=', sessionId)
    .executeTakeFirst();
}

/** When the holder of a session last proved who they are; undefined for an unknown session. */
export async function findSessionAuthenticatedAt(db: Executor, sessionId: string): Promise<Date | undefined> {
  const row = await db.selectFrom('sessions').select('authenticated_at').where('id', '=', sessionId).executeTakeFirst();
  return row?.authenticated_at;
}

/** Records a new proof of who holds a live session; false when the session is not (or no longer) live. */
export async function renewSessionAuthentication(db: Executor, sessionId: string, at: Date): Promise<boolean> {
  const renewed = await db
    .updateTable('sessions')
    .set({ authenticated_at: at })
    .where('id', '=', sessionId)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .returning('id')
    .executeTakeFirst();
  return renewed !== undefined;
}

/** Raises a session's assurance once a second factor has been shown in it. */
export async function raiseSessionAssurance(db: Executor, sessionId: string, amr: string[], aal: AssuranceLevel): Promise<void> {
  await db.updateTable('sessions').set({ amr, aal }).where('id', '=', sessionId).execute();
}

/** The organisation the session acts for; null for none or an unknown session. */
export async function findSessionOrganization(db: Executor, sessionId: string): Promise<number | null> {
  const row = await db.selectFrom('sessions').select('organization_id').where('id', '=', sessionId).executeTakeFirst();
  return row?.organization_id ?? null;
}

export async function setSessionOrganization(db: Executor, sessionId: string, organizationId: number | null): Promise<void> {
  await db.updateTable('sessions').set({ organization_id: organizationId }).where('id', '=', sessionId).execute();
}
