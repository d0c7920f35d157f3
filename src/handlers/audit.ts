import { ok, signedIn } from './reply.js';
import type { Handler } from './types.js';
import { auditEventView } from './views.js';

export const listAuditEvents: Handler<'listAuditEvents'> = async (input, { audit }) => {
  const { rows, meta } = await audit.list(signedIn(input), input.query);
  return ok(rows.map(auditEventView), { meta });
};
