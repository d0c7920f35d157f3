import type { UserRow } from './db/types.js';
import { Forbidden } from './errors.js';

interface Caller {
  user: UserRow;
  /** The request the principal is acting through. */
  client: ClientInfo;
}

/** A user signed in: the session their access token belongs to. */
export interface SessionPrincipal extends Caller {
  sessionId: string;
  /** When the session's holder last proved who they are, as the access token says (`auth_time`). */
  authenticatedAt: Date;
  apiKey?: undefined;
  /**
   * An admin acting as the user with a token from token exchange: `sessionId` is then the admin's
   * session, which the token lives no longer than. Such a principal may not manage credentials.
   */
  impersonator?: { id: number };
}

/** A program acting for the user with one of their API keys: it has no session. */
export interface ApiKeyPrincipal extends Caller {
  apiKey: { id: number; readOnly: boolean };
  sessionId?: undefined;
  impersonator?: undefined;
}

/** Who is calling: a user through a session, or a program through one of the user's API keys. */
export type Principal = SessionPrincipal | ApiKeyPrincipal;

/** Where a request comes from: kept on the sessions it opens and on the audit events it causes. */
export interface ClientInfo {
  ip: string | null;
  /** At most 512 characters. */
  userAgent: string | null;
  requestId: string | null;
  /** The service's origin as the client reached it (behind a trusted proxy, as the proxy says): where browser flows come back to. */
  origin?: string;
  /** The admin acting as the user (token exchange): the events the request causes name them as actor. */
  impersonator?: number;
}

export const isAdmin = (principal: Principal): boolean => principal.user.role === 'admin';

export function requireAdmin(principal: Principal): void {
  if (!isAdmin(principal)) throw new Forbidden('Admin role required');
}

/** Admins may act on anyone; a user only on themselves. */
export function requireSelfOrAdmin(principal: Principal, id: number): void {
  if (!isAdmin(principal) && principal.user.id !== id) throw new Forbidden('Not allowed to act on another user');
}

const KEYS_CANNOT_MANAGE_CREDENTIALS =
  'API keys cannot manage credentials or sign-in (API keys, second factors, passkeys, passwords, roles, e-mail, sessions, logout, identity providers, OAuth clients, user imports): sign in to do that';

const IMPERSONATION_CANNOT_MANAGE_CREDENTIALS =
  'An admin acting as a user cannot manage their credentials or sign-in (API keys, second factors, passkeys, passwords, e-mail, sessions, logout, identity providers)';

/** What an operation does, for the keys it refuses: managing credentials, or anything but reading. */
export interface OperationKind {
  managesCredentials: boolean;
  readsOnly: boolean;
}

/**
 * An API key may act for its user, but never manage their credentials nor what manages sign-in
 * (identity providers, OAuth clients, anyone's password or role), since a key that leaks must not be
 * able to take an account over or outlive its own deletion; a read-only key only reads.
 */
export function requireKeyMay(principal: Principal, operation: OperationKind): void {
  if (principal.impersonator) {
    if (operation.managesCredentials) throw new Forbidden(IMPERSONATION_CANNOT_MANAGE_CREDENTIALS);
    return;
  }
  if (!principal.apiKey) return;
  if (operation.managesCredentials) throw new Forbidden(KEYS_CANNOT_MANAGE_CREDENTIALS);
  if (principal.apiKey.readOnly && !operation.readsOnly) throw new Forbidden('This API key is read-only: it may only send GET requests');
}

/** The caller's session, for the rules that act on it; an API key has none and is refused. */
export function sessionOf(principal: Principal): string {
  if (principal.apiKey) throw new Forbidden(KEYS_CANNOT_MANAGE_CREDENTIALS);
  if (principal.impersonator) throw new Forbidden(IMPERSONATION_CANNOT_MANAGE_CREDENTIALS);
  return principal.sessionId;
}
