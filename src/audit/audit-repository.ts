import { type ColumnType, type Generated, type Insertable, type Selectable } from 'kysely';
import type { Executor } from '../db/types.js';

/** A JSON object of plain values: what an event's `details` may hold. */
export type AuditDetails = Record<string, string | number | boolean | null | string[]>;

// Type aliases rather than interfaces: withTables wants types with an implicit index signature.
export type AuditEventTable = {
  /** bigint: pg returns it as a string, PGlite as a number; read it through `toRow`. */
  id: ColumnType<string | number, never, never>;
  occurred_at: Generated<Date>;
  event_type: string;
  actor_user_id: number | null;
  subject_user_id: number | null;
  ip: string | null;
  user_agent: string | null;
  request_id: string | null;
  details: ColumnType<AuditDetails, string, never>;
};

type AuditTables = {
  audit_events: AuditEventTable;
};

export type AuditEventRow = Omit<Selectable<AuditEventTable>, 'id'> & { id: number };
export type NewAuditEventRow = Omit<Insertable<AuditEventTable>, 'details'> & { details: AuditDetails };

export interface AuditFilter {
  /** Events this user did or that were done to them. */
  userId?: number;
  eventType?: string;
  /** Inclusive. */
  since?: Date;
  /** Exclusive. */
  until?: Date;
}

/** The audit table's queries, typed; it sits beside the Database interface rather than in it. */
const audit = (db: Executor) => db.withTables<AuditTables>();

export async function insertAuditEvent(db: Executor, row: NewAuditEventRow): Promise<void> {
  await audit(db)
    .insertInto('audit_events')
    .values({ ...row, details: JSON.stringify(row.details) })
    .execute();
}

/** Inserts many events in one statement (an import's), so that a large batch is not a round trip per event. */
export async function insertAuditEvents(db: Executor, rows: NewAuditEventRow[]): Promise<void> {
  if (rows.length === 0) return;
  await audit(db)
    .insertInto('audit_events')
    .values(rows.map((row) => ({ ...row, details: JSON.stringify(row.details) })))
    .execute();
}

/** Up to `limit` events with an id above `after` that match the filter, by id ascending. */
export async function listAuditEventsAfter(db: Executor, filter: AuditFilter, after: number, limit: number): Promise<AuditEventRow[]> {
  let q = audit(db).selectFrom('audit_events').selectAll().where('id', '>', after);
  const { userId, eventType, since, until } = filter;
  if (userId !== undefined) q = q.where((eb) => eb.or([eb('actor_user_id', '=', userId), eb('subject_user_id', '=', userId)]));
  if (eventType !== undefined) q = q.where('event_type', '=', eventType);
  if (since !== undefined) q = q.where('occurred_at', '>=', since);
  if (until !== undefined) q = q.where('occurred_at', '<', until);
  const rows = await q.orderBy('id', 'asc').limit(limit).execute();
  return rows.map((row) => ({ ...row, id: Number(row.id) }));
}
