import type { components } from '../../generated/openapi';
import type { AuditEventRow } from '../db/audit';
import { ok, signedIn } from './reply';
import type { Handler } from './types';

type AuditEvent = components['schemas']['AuditEvent'];

export const listAuditEvents: Handler<'listAuditEvents'> = async (input, { audit }) => {
  const { rows, meta } = await audit.list(signedIn(input), input.query);
  return ok(rows.map(auditEventView), { meta });
};

/** An audit event as the contract shows it. */
function auditEventView(row: AuditEventRow): AuditEvent {
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
