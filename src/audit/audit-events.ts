import type { components } from '../../generated/openapi.js';
import { insertAuditEvent, insertAuditEvents, type AuditDetails, type NewAuditEventRow } from './audit-repository.js';
import type { UnitOfWork } from '../db/transaction.js';
import type { ClientInfo } from '../principal.js';
import { queueWebhookEvents, type WebhookEvent, type WebhookEventType } from '../webhooks/webhook-events.js';

export type AuditEventType = components['schemas']['AuditEventType'];

/** Every event type; a Record, so that the compiler notices a type the contract adds. */
export const AUDIT_EVENT_TYPES = Object.keys({
  'user.registered': true,
  'login.succeeded': true,
  'login.failed': true,
  'login.locked': true,
  'session.refreshed': true,
  'session.refresh_reuse_detected': true,
  'session.logged_out': true,
  'session.revoked': true,
  'session.reauthenticated': true,
  'password.changed': true,
  'password.reset_requested': true,
  'password.reset_completed': true,
  'email_code.requested': true,
  'email.verified': true,
  'user.created': true,
  'user.updated': true,
  'user.deleted': true,
  'user.restored': true,
  'mfa.challenged': true,
  'mfa.verified': true,
  'mfa.failed': true,
  'mfa.totp_enrolment_started': true,
  'mfa.factor_added': true,
  'mfa.factor_removed': true,
  'mfa.recovery_codes_generated': true,
  'mfa.recovery_code_used': true,
  'mfa.reset': true,
  'api_key.created': true,
  'api_key.deleted': true,
  'webhook.created': true,
  'webhook.updated': true,
  'webhook.deleted': true,
  'webhook.secret_rotated': true,
  'webhook.delivery_retried': true,
  'identity_provider.created': true,
  'identity_provider.updated': true,
  'identity_provider.deleted': true,
  'identity.linked': true,
  'identity.unlinked': true,
  'identity.link_failed': true,
  'oauth_client.created': true,
  'oauth_client.updated': true,
  'oauth_client.deleted': true,
  'oauth_client.secret_rotated': true,
  'oauth_grant.revoked': true,
  'oauth_resource.created': true,
  'oauth_resource.updated': true,
  'oauth_resource.deleted': true,
  'organization.created': true,
  'organization.updated': true,
  'organization.deleted': true,
  'organization.member_added': true,
  'organization.member_removed': true,
  'organization.role_changed': true,
  'organization.domain_added': true,
  'organization.domain_verified': true,
  'organization.domain_removed': true,
  'organization.sign_in_updated': true,
  'organization.invitation_created': true,
  'organization.invitation_accepted': true,
  'organization.invitation_declined': true,
  'organization.invitation_revoked': true,
  'organization_role.created': true,
  'organization_role.updated': true,
  'organization_role.deleted': true,
  'impersonation.started': true,
} satisfies Record<AuditEventType, true>) as readonly AuditEventType[];

/** Where the request that causes an event comes from; null for events without one (start-up, the CLI). */
export type RequestOrigin = ClientInfo | null;

export interface AuditEvent {
  type: AuditEventType;
  /** Who acted; null when no one was identified (a failed login, a reset request, start-up). */
  actor: number | null;
  /** The account the event is about. */
  subject: number | null;
  /** A few facts about the event; never a password, a token or a hash. */
  details?: AuditDetails;
  origin: RequestOrigin;
}

/**
 * Writes an authentication or administration event in the unit of work of the change it records,
 * so that the event exists exactly when its change does; so do the webhook messages it stands for.
 */
export async function recordEvent(trx: UnitOfWork, caused: AuditEvent): Promise<void> {
  const event = asImpersonated(caused);
  await insertAuditEvent(trx, rowOf(event));
  trx.recordedEvents.push(event.type);
  await queueWebhookEvents(trx, webhookEventsOf(event));
}

/** Writes many events in one statement (an import's), so that a large batch is not a round trip per event. */
export async function recordEvents(trx: UnitOfWork, events: readonly AuditEvent[]): Promise<void> {
  events = events.map(asImpersonated);
  await insertAuditEvents(trx, events.map(rowOf));
  trx.recordedEvents.push(...events.map((event) => event.type));
  await queueWebhookEvents(trx, events.flatMap(webhookEventsOf));
}

/**
 * An event caused by an admin acting as a user (token exchange) names the admin as its actor, the
 * user as its subject when it names none, and says so with `impersonated: true`.
 */
function asImpersonated(event: AuditEvent): AuditEvent {
  const admin = event.origin?.impersonator;
  if (admin === undefined) return event;
  return { ...event, actor: admin, subject: event.subject ?? event.actor, details: { ...event.details, impersonated: true } };
}

/** The webhook event that an audit event of a user's account stands for, one for one. */
const USER_EVENT_OF = {
  'user.created': 'user.created',
  'user.deleted': 'user.deleted',
  'user.restored': 'user.restored',
  'email.verified': 'user.email_verified',
  'password.changed': 'user.password_changed',
  'password.reset_completed': 'user.password_changed',
} as const satisfies Record<string, WebhookEventType>;

/**
 * The webhook events an audit event stands for: the one place that says which changes other
 * systems are told of. A session ending as a side effect (a password change, a disabled or deleted
 * account, a first second factor) is reported by that change's event alone.
 */
export function webhookEventsOf(event: AuditEvent): WebhookEvent[] {
  const { subject, details = {} } = event;
  if (event.type.startsWith('organization.')) return organizationEventsOf(event);
  if (subject === null) return [];
  const about = (type: WebhookEventType): WebhookEvent => ({ type, userId: subject });
  const session = (type: WebhookEventType, all = details.all === true): WebhookEvent => ({
    type,
    userId: subject,
    session: {
      id: typeof details.session_id === 'string' ? details.session_id : null,
      all,
      provider: typeof details.provider === 'string' ? details.provider : null,
    },
  });
  const identity = (type: WebhookEventType): WebhookEvent[] =>
    typeof details.identity_id === 'number' && typeof details.provider === 'string' && typeof details.subject === 'string'
      ? [{ type, userId: subject, identity: { id: details.identity_id, provider: details.provider, subject: details.subject } }]
      : [];
  switch (event.type) {
    case 'user.registered':
      return typeof details.session_id === 'string' ? [about('user.created'), session('session.created')] : [about('user.created')];
    case 'user.created':
    case 'user.deleted':
    case 'user.restored':
      return [about(USER_EVENT_OF[event.type])];
    case 'user.updated': {
      // A new password is news of its own; the rest of an update is `user.updated`.
      const fields = Array.isArray(details.fields) ? details.fields : [];
      return [
        ...(fields.some((field) => field !== 'password') ? [about('user.updated')] : []),
        ...(fields.includes('password') ? [about('user.password_changed')] : []),
      ];
    }
    case 'email.verified':
    case 'password.changed':
    case 'password.reset_completed':
      return [about(USER_EVENT_OF[event.type])];
    case 'mfa.factor_added':
      return details.first === true ? [about('user.mfa_enabled')] : [];
    case 'mfa.factor_removed':
      return details.factors_left === 0 ? [about('user.mfa_disabled')] : [];
    case 'mfa.reset':
      return typeof details.factors_removed === 'number' && details.factors_removed > 0 ? [about('user.mfa_disabled')] : [];
    case 'login.succeeded':
      return [session('session.created')];
    case 'session.logged_out':
    case 'session.revoked':
      return [session('session.revoked')];
    case 'session.refresh_reuse_detected':
      return [session('session.revoked', false)];
    case 'identity.linked':
      return identity('user.identity_linked');
    case 'identity.unlinked':
      return identity('user.identity_unlinked');
    default:
      return [];
  }
}

/** An organisation's event, with the organisation as it was and, for a member's, the member and their role. */
function organizationEventsOf(event: AuditEvent): WebhookEvent[] {
  const { subject, details = {} } = event;
  const { organization_id: id, slug, name, role, previous_role: previousRole, domain } = details;
  if (typeof id !== 'number' || typeof slug !== 'string' || typeof name !== 'string') return [];
  const member =
    // A person who declined an invitation is its subject, but no member.
    subject !== null && typeof role === 'string' && event.type !== 'organization.invitation_declined'
      ? { userId: subject, role, ...(typeof previousRole === 'string' && { previousRole }) }
      : undefined;
  const { invitation_id: invitationId, email } = details;
  const invitation =
    typeof invitationId === 'string' && typeof email === 'string' && typeof role === 'string'
      ? { id: invitationId, email, role }
      : undefined;
  return [
    {
      type: event.type as WebhookEventType,
      organization: { id, slug, name },
      member,
      invitation,
      ...(typeof domain === 'string' && { domain }),
    },
  ];
}

function rowOf(event: AuditEvent): NewAuditEventRow {
  const { origin } = event;
  return {
    event_type: event.type,
    actor_user_id: event.actor,
    subject_user_id: event.subject,
    ip: origin?.ip ?? null,
    user_agent: origin?.userAgent ?? null,
    request_id: origin?.requestId ?? null,
    details: event.details ?? {},
  };
}
