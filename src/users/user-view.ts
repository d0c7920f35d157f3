import type { components } from '../../generated/openapi.js';
import type { ListedUser } from './user-repository.js';

type User = components['schemas']['User'];

/** The drivers give timestamps as dates; a date is written as it is rather than copied first. */
export const iso = (value: Date | string): string => (value instanceof Date ? value : new Date(value)).toISOString();

/**
 * A user as the contract shows it: never a hash; `deleted_at` for admins only. The handlers answer
 * with it, and webhook payloads carry it, so it sits where both can reach it.
 */
export function userView(row: ListedUser, forAdmin: boolean): User {
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
