import type { AuditEventTable } from '../../src/db/audit';
import type { TestContext } from './app';

/** The audit events of one type about one user, oldest first, as the app's database holds them. */
export function auditEventsOf(t: TestContext, subject: number, type: string) {
  return t.db
    .withTables<{ audit_events: AuditEventTable }>()
    .selectFrom('audit_events')
    .selectAll()
    .where('subject_user_id', '=', subject)
    .where('event_type', '=', type)
    .orderBy('id')
    .execute();
}
