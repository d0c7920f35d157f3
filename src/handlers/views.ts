import type { components } from '../../generated/openapi';
import type { MfaFactorRow, SessionRow, UserRow } from '../db/types';

type User = components['schemas']['User'];
type Session = components['schemas']['Session'];

const iso = (value: Date | string): string => new Date(value).toISOString();

/** A user as the contract shows it: never a hash; `deleted_at` for admins only. */
export function userView(row: UserRow, forAdmin: boolean): User {
  const user: User = {
    id: row.id,
    email: row.email,
    name: row.name,
    role: row.role,
    is_active: row.is_active,
    email_verified: row.email_verified,
    pending_email: row.pending_email,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
  if (forAdmin) user.deleted_at = row.deleted_at === null ? null : iso(row.deleted_at);
  return user;
}

/** A session as its owner sees it; `current` marks the one of the token in use. */
export function sessionView(row: SessionRow, currentSessionId: string): Session {
  return {
    id: row.id,
    created_at: iso(row.created_at),
    last_used_at: iso(row.last_used_at),
    expires_at: iso(row.expires_at),
    ip: row.ip,
    user_agent: row.user_agent,
    current: row.id === currentSessionId,
  };
}

type Factor = components['schemas']['Factor'];

/** A second factor as its owner sees it: never a secret or a key. */
export function factorView(row: MfaFactorRow): Factor {
  return {
    id: row.id,
    type: row.type,
    name: row.name,
    created_at: iso(row.created_at),
    last_used_at: row.last_used_at === null ? null : iso(row.last_used_at),
  };
}
