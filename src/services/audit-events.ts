import type { components } from '../../generated/openapi';
import { insertAuditEvent, insertAuditEvents, type AuditDetails, type NewAuditEventRow } from '../db/audit';
import type { UnitOfWork } from '../db/transaction';
import type { ClientInfo } from './principal';

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
  'password.changed': true,
  'password.reset_requested': true,
  'password.reset_completed': true,
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
 * so that the event exists exactly when its change does.
 */
export async function recordEvent(trx: UnitOfWork, event: AuditEvent): Promise<void> {
  await insertAuditEvent(trx, rowOf(event));
  trx.recordedEvents.push(event.type);
}

/** Writes many events in one statement (an import's), so that a large batch is not a round trip per event. */
export async function recordEvents(trx: UnitOfWork, events: readonly AuditEvent[]): Promise<void> {
  await insertAuditEvents(trx, events.map(rowOf));
  trx.recordedEvents.push(...events.map((event) => event.type));
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
