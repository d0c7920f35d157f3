import { ok, signedIn } from './reply';
import type { Handler } from './types';
import { auditEventView } from './views';

export const listAuditEvents: Handler<'listAuditEvents'> = async (input, { audit }) => {
  const { rows, meta } = await audit.list(signedIn(input), input.query);
  return ok(rows.map(auditEventView), { meta });
};
