import type { AuditEventTable } from '../../src/audit/audit-repository.js';
import type { TestContext } from './app.js';

/** The app's database with the audit trail's table, which the service reads through its own repository. */
export const auditTable = (app: TestContext) => app.db.withTables<{ audit_events: AuditEventTable }>();

/** The audit events of one type about one user, oldest first. */
export function auditRows(app: TestContext, subject: number, type: string) {
  return auditTable(app)
    .selectFrom('audit_events')
    .selectAll()
    .where('subject_user_id', '=', subject)
    .where('event_type', '=', type)
    .orderBy('id')
    .execute();
}
