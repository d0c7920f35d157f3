import type { Kysely } from 'kysely';
import type { PaginationConfig } from '../config/index.js';
import { listAuditEventsAfter, type AuditEventRow } from './audit-repository.js';
import type { Database } from '../db/types.js';
import { Validation, type FieldProblem } from '../errors.js';
import type { AuditEventType } from './audit-events.js';
import { requireAdmin, type Principal } from '../principal.js';

export interface AuditQuery {
  cursor?: number;
  limit?: number;
  user_id?: number;
  event_type?: AuditEventType;
  since?: string;
  until?: string;
}

export interface AuditPage {
  rows: AuditEventRow[];
  meta: { next_cursor: number | null; has_more: boolean };
}

/** The audit trail as admins read it. */
export class AuditService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly config: PaginationConfig,
  ) {}

  /** Events by id ascending after `cursor`; admins only. */
  async list(principal: Principal, query: AuditQuery): Promise<AuditPage> {
    requireAdmin(principal);
    const since = parseTime(query.since, 'query.since');
    const until = parseTime(query.until, 'query.until');
    if (since && until && until <= since) throw new Validation([{ field: 'query.until', message: 'must be later than since' }]);
    const limit = query.limit ?? this.config.defaultPageSize;
    const rows = await listAuditEventsAfter(
      this.db,
      { userId: query.user_id, eventType: query.event_type, since, until },
      query.cursor ?? 0,
      limit + 1,
    );
    const has_more = rows.length > limit;
    const page = has_more ? rows.slice(0, limit) : rows;
    return { rows: page, meta: { next_cursor: has_more ? page[page.length - 1].id : null, has_more } };
  }
}

/**
 * The contract's date-time format admits a few strings Date cannot represent (a leap second,
 * 23:59:60) and, once moved to UTC by their offset, years outside 1 to 9999 (0000-01-01T00:00:00+01:00).
 * Those are refused like any other invalid value rather than reaching the database.
 */
function parseTime(value: string | undefined, field: FieldProblem['field']): Date | undefined {
  if (value === undefined) return undefined;
  const time = new Date(value);
  const year = time.getUTCFullYear();
  if (Number.isNaN(year) || year < 1 || year > 9999)
    throw new Validation([{ field, message: 'must be a date-time from year 1 to 9999 (UTC)' }]);
  return time;
}
