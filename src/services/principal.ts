import type { UserRow } from '../db/types';
import { Forbidden } from '../errors';

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

export const isAdmin = (principal: Principal): boolean => principal.user.role === 'admin';

export function requireAdmin(principal: Principal): void {
  if (!isAdmin(principal)) throw new Forbidden('Admin role required');
}

/** Admins may act on anyone; a user only on themselves. */
export function requireSelfOrAdmin(principal: Principal, id: number): void {
  if (!isAdmin(principal) && principal.user.id !== id) throw new Forbidden('Not allowed to act on another user');
}
