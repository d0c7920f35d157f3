import type { Core } from '../wiring/core.js';
import { AuditService } from './audit.js';

/** The audit trail as admins read it; events are recorded by every capability in its own units of work. */
export function auditRoom(core: Pick<Core, 'config' | 'db'>) {
  return { audit: new AuditService(core.db, core.config.pagination) };
}
