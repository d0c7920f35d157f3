import type { Kysely, Transaction } from 'kysely';
import type { components } from '../../generated/openapi';
import type { Config } from '../config';
import { deleteAuditEventsBefore, insertAuditEvent, insertAuditEvents, listAuditEventsAfter, type AuditDetails, type AuditEventRow } from '../db/audit';
import type { Database } from '../db/types';
import { validationError, type FieldError } from '../http/errors';
import type { Logger } from '../logger';
import type { ClientInfo, Principal } from './auth';
import { requireAdmin } from './users';

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
} satisfies Record<AuditEventType, true>) as readonly AuditEventType[];

export interface AuditEvent {
  type: AuditEventType;
  /** Who acted; null when no one was identified (a failed login, a reset request, start-up). */
  actor: number | null;
  /** The account the event is about. */
  subject: number | null;
  /** A few facts about the event; never a password, a token or a hash. */
  details?: AuditDetails;
}

/** Writes an event in the transaction it was handed with. */
export type Recorder = (event: AuditEvent) => Promise<void>;
/** Writes many events in that transaction at once. */
export type BulkRecorder = (events: AuditEvent[]) => Promise<void>;

/** Where the request that causes an event comes from; null for events without one (start-up, the CLI). */
export type RequestOrigin = ClientInfo | null;

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

const PURGE_INTERVAL_MS = 60 * 60 * 1000;
const PURGE_BATCH = 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The audit trail: authentication and administration events, written in the transaction of the
 * change they record, so that an event exists exactly when its change does.
 */
export class AuditTrail {
  private readonly listeners: Array<(type: AuditEventType) => void> = [];
  private timer: NodeJS.Timeout | undefined;
  private purging: Promise<unknown> | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly config: Config,
    private readonly logger: Logger,
  ) {}

  /** Calls `listener` once for each event, after it has been committed. */
  onRecorded(listener: (type: AuditEventType) => void): void {
    this.listeners.push(listener);
  }

  /** Records an event on its own, for one that comes with no change to record it with (a failed login). */
  async record(origin: RequestOrigin, event: AuditEvent): Promise<void> {
    await insertAuditEvent(this.db, this.row(origin, event));
    this.announce([event]);
  }

  /** Runs `work` in one transaction, with recorders that write events in that transaction. */
  async transaction<T>(origin: RequestOrigin, work: (trx: Transaction<Database>, record: Recorder, recordAll: BulkRecorder) => Promise<T>): Promise<T> {
    const recorded: AuditEvent[] = [];
    const result = await this.db.transaction().execute((trx) =>
      work(
        trx,
        async (event) => {
          await insertAuditEvent(trx, this.row(origin, event));
          recorded.push(event);
        },
        async (events) => {
          await insertAuditEvents(trx, events.map((event) => this.row(origin, event)));
          recorded.push(...events);
        },
      ),
    );
    this.announce(recorded);
    return result;
  }

  /** Events by id ascending after `cursor`; admins only. */
  async list(principal: Principal, query: AuditQuery): Promise<AuditPage> {
    requireAdmin(principal);
    const since = parseTime(query.since, 'query.since');
    const until = parseTime(query.until, 'query.until');
    if (since && until && until <= since) throw validationError([{ field: 'query.until', message: 'must be later than since' }]);
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

  /** Purges events past AUDIT_RETENTION_DAYS now and every hour; nothing without that setting. */
  start(): void {
    if (this.config.auditRetentionDays === undefined || this.timer) return;
    const run = () => {
      this.purging ??= this.purge()
        .catch((error: unknown) => this.logger.warn({ err: error }, 'audit trail: could not purge old events'))
        .finally(() => (this.purging = undefined));
    };
    this.timer = setInterval(run, PURGE_INTERVAL_MS);
    this.timer.unref();
    run();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.purging;
  }

  /** Deletes the events older than AUDIT_RETENTION_DAYS, a batch at a time; returns how many. */
  async purge(): Promise<number> {
    if (this.config.auditRetentionDays === undefined) return 0;
    const before = new Date(Date.now() - this.config.auditRetentionDays * DAY_MS);
    let total = 0;
    for (;;) {
      const deleted = await deleteAuditEventsBefore(this.db, before, PURGE_BATCH);
      total += deleted;
      if (deleted < PURGE_BATCH) break;
    }
    if (total > 0) this.logger.info({ deleted: total, before }, 'audit trail: purged old events');
    return total;
  }

  private row(origin: RequestOrigin, event: AuditEvent) {
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

  private announce(events: AuditEvent[]): void {
    for (const event of events) for (const listener of this.listeners) listener(event.type);
  }
}

/**
 * The contract's date-time format admits a few strings Date cannot represent (a leap second,
 * 23:59:60) and, once moved to UTC by their offset, years outside 1 to 9999 (0000-01-01T00:00:00+01:00).
 * Those are refused like any other invalid value rather than reaching the database.
 */
function parseTime(value: string | undefined, field: FieldError['field']): Date | undefined {
  if (value === undefined) return undefined;
  const time = new Date(value);
  const year = time.getUTCFullYear();
  if (Number.isNaN(year) || year < 1 || year > 9999) throw validationError([{ field, message: 'must be a date-time from year 1 to 9999 (UTC)' }]);
  return time;
}
