import type { components } from '../../generated/openapi.js';
import type { Overview } from '../admin-overview/overview.js';
import type { AuditEventRow } from '../audit/audit-repository.js';
import type { ApiKeyRow, MfaFactorRow, SessionRow } from '../db/types.js';
import type { WebhookEndpointRow } from '../webhooks/webhook-repository.js';
import type { MemberRow, OrganizationRoleRow, OrganizationRow } from '../organizations/organization-repository.js';
import type { OrganizationDomainRow } from '../organizations/domain-repository.js';
import { verificationName } from '../organizations/domains.js';
import type { InvitationRow } from '../organizations/invitation-repository.js';
import type { TokenPair } from '../sessions/auth.js';
import type { ImportResult } from '../user-import/user-import.js';
import { iso } from '../users/user-view.js';
import type { WebhookDeliveryWithAttempts } from '../webhooks/webhooks.js';

export { userView } from '../users/user-view.js';

type Session = components['schemas']['Session'];
type WireTokenPair = components['schemas']['TokenPair'];
type WireAccessToken = components['schemas']['AccessToken'];
type AuditEvent = components['schemas']['AuditEvent'];
type Factor = components['schemas']['Factor'];
type WireImportResult = components['schemas']['ImportResult'];
type ApiKey = components['schemas']['ApiKey'];
type CreatedApiKey = components['schemas']['CreatedApiKey'];
type WebhookEndpoint = components['schemas']['WebhookEndpoint'];
type WebhookDelivery = components['schemas']['WebhookDelivery'];

/** A session as its owner sees it; `current` marks the one of the token in use. */
export function sessionView(row: SessionRow, currentSessionId: string): Session {
  return {
    id: row.id,
    created_at: iso(row.created_at),
    last_used_at: iso(row.last_used_at),
    expires_at: iso(row.expires_at),
    ip: row.ip,
    user_agent: row.user_agent,
    // Only on sessions a provider signed in: the list's shape is otherwise as it always was.
    ...(row.provider === null ? {} : { provider: row.provider }),
    current: row.id === currentSessionId,
  };
}

/** A session's tokens as OAuth2 clients read them (RFC 6749 §5.1). */
export function tokenPairView(pair: TokenPair): WireTokenPair {
  return { access_token: pair.accessToken, refresh_token: pair.refreshToken, token_type: 'bearer', expires_in: pair.expiresInSeconds };
}

/** A new access token alone, named as in the token pair. */
export function accessTokenView(token: { accessToken: string; expiresInSeconds: number }): WireAccessToken {
  return { access_token: token.accessToken, token_type: 'bearer', expires_in: token.expiresInSeconds };
}

/** An audit event as the contract shows it. */
export function auditEventView(row: AuditEventRow): AuditEvent {
  return {
    id: row.id,
    occurred_at: iso(row.occurred_at),
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

/** A webhook endpoint as admins see it: never its secret. */
export function webhookEndpointView(row: WebhookEndpointRow): WebhookEndpoint {
  const { id, url, description, enabled, previous_secret_expires_at: previousUntil } = row;
  const overlapping = previousUntil !== null && new Date(previousUntil).getTime() > Date.now();
  return {
    id,
    url,
    events: row.events as WebhookEndpoint['events'],
    description,
    enabled,
    previous_secret_expires_at: overlapping ? iso(previousUntil) : null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** One delivery of the log, with each of its attempts. */
export function webhookDeliveryView(row: WebhookDeliveryWithAttempts): WebhookDelivery {
  const { id, message_id, status, attempts, last_status_code, last_error } = row;
  return {
    id,
    message_id,
    event_type: row.event_type as WebhookDelivery['event_type'],
    status,
    attempts,
    last_status_code,
    last_error,
    next_attempt_at: row.status === 'pending' ? iso(row.next_attempt_at) : null,
    created_at: iso(row.created_at),
    delivered_at: row.delivered_at === null ? null : iso(row.delivered_at),
    attempt_log: row.attemptLog.map((attempt) => ({
      attempted_at: iso(attempt.attempted_at),
      status_code: attempt.status_code,
      error: attempt.error,
      duration_ms: attempt.duration_ms,
    })),
  };
}

export function organizationView(row: OrganizationRow): components['schemas']['Organization'] {
  return { id: row.id, slug: row.slug, name: row.name, created_at: iso(row.created_at), updated_at: iso(row.updated_at) };
}

export function organizationMemberView(row: MemberRow): components['schemas']['OrganizationMember'] {
  return { user: { id: row.user_id, email: row.email, name: row.name }, role: row.role, joined_at: iso(row.joined_at) };
}

export function organizationRoleView(row: OrganizationRoleRow): components['schemas']['OrganizationRole'] {
  const { key, name, permissions, built_in } = row;
  return { key, name, permissions, built_in, created_at: iso(row.created_at), updated_at: iso(row.updated_at) };
}

export function organizationDomainView(row: OrganizationDomainRow): components['schemas']['OrganizationDomain'] {
  return {
    domain: row.domain,
    verified: row.verified_at !== null,
    verified_at: row.verified_at && iso(row.verified_at),
    verification: { type: 'dns_txt', name: verificationName(row.domain), value: row.verification_token },
    created_at: iso(row.created_at),
  };
}

export function organizationInvitationView(row: InvitationRow): components['schemas']['OrganizationInvitation'] {
  const inviter =
    row.invited_by !== null && row.inviter_email !== null && row.inviter_name !== null
      ? { id: row.invited_by, email: row.inviter_email, name: row.inviter_name }
      : null;
  return {
    id: row.id,
    organization: { id: row.organization_id, slug: row.organization_slug, name: row.organization_name },
    email: row.email,
    role: row.role,
    invited_by: inviter,
    created_at: iso(row.created_at),
    expires_at: iso(row.expires_at),
  };
}

/** The admin's overview as the contract shows it. */
export function adminOverviewView(overview: Overview): components['schemas']['AdminOverview'] {
  const backlog = (counts: Overview['mail']) => ({
    pending: counts.pending,
    failed: counts.failed,
    oldest_pending_at: counts.oldest_pending_at && iso(counts.oldest_pending_at),
  });
  const { users, signIns, health } = overview;
  return {
    generated_at: iso(overview.generatedAt),
    users: { total: users.active + users.inactive, active: users.active, disabled: users.inactive, deleted: users.deleted },
    sign_ins: { since: iso(signIns.since), succeeded: signIns.succeeded, failed: signIns.failed },
    health: { status: health.draining ? 'draining' : 'ok', version: health.version, uptime_seconds: health.uptimeSeconds },
    mail: backlog(overview.mail),
    webhooks: backlog(overview.webhooks),
  };
}
