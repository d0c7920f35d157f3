import type { components } from '../../generated/openapi';
import type { AuditEventRow } from '../db/audit';
import type { ApiKeyRow, MfaFactorRow, SessionRow } from '../db/types';
import type { ListedUser } from '../db/users';
import type { TokenPair } from '../services/auth';
import type { ImportResult } from '../services/user-import';

type User = components['schemas']['User'];
type Session = components['schemas']['Session'];
type WireTokenPair = components['schemas']['TokenPair'];
type AuditEvent = components['schemas']['AuditEvent'];
type Factor = components['schemas']['Factor'];
type WireImportResult = components['schemas']['ImportResult'];
type ApiKey = components['schemas']['ApiKey'];
type CreatedApiKey = components['schemas']['CreatedApiKey'];

const iso = (value: Date | string): string => new Date(value).toISOString();

/** A user as the contract shows it: never a hash; `deleted_at` for admins only. */
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

/** A session's tokens as OAuth2 clients read them (RFC 6749 §5.1). */
export function tokenPairView(pair: TokenPair): WireTokenPair {
  return { access_token: pair.accessToken, refresh_token: pair.refreshToken, token_type: 'bearer', expires_in: pair.expiresInSeconds };
}

/** An audit event as the contract shows it. */
export function auditEventView(row: AuditEventRow): AuditEvent {
  return {
    id: row.id,
    occurred_at: new Date(row.occurred_at).toISOString(),
    event_type: row.event_type as AuditEvent['event_type'],
    actor_user_id: row.actor_user_id,
    subject_user_id: row.subject_user_id,
    ip: row.ip,
    user_agent: row.user_agent,
    request_id: row.request_id,
    details: row.details,
  };
}

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

/** What became of one imported row; `reason` only for an invalid one. */
export function importResultView(result: ImportResult): WireImportResult {
  const view: WireImportResult = { row: result.row, email: result.email, status: result.status };
  if (result.reason !== undefined) view.reason = result.reason;
  return view;
}

/** An API key as its owner's list shows it: never the key, only its first characters. */
export function apiKeyView(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    read_only: row.read_only,
    created_at: iso(row.created_at),
    expires_at: iso(row.expires_at),
    last_used_at: row.last_used_at === null ? null : iso(row.last_used_at),
  };
}

/** A new API key with the key itself, which no other answer carries. */
export function createdApiKeyView(row: ApiKeyRow, key: string): CreatedApiKey {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    key,
    read_only: row.read_only,
    created_at: iso(row.created_at),
    expires_at: iso(row.expires_at),
  };
}
