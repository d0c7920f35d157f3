import type { Kysely, Transaction } from 'kysely';
import type { Database } from './types.js';

/**
 * A transaction a service opened: repositories and recorders take it as their first argument, so
 * that a change and everything that reports it (its audit events, its mail) commit or roll back together.
 */
export type UnitOfWork = Transaction<Database> & {
  /** The types of the audit events written in it, reported once it has committed. */
  readonly recordedEvents: string[];
  /** The ids of the webhook messages written (or made due again) in it, sent once it has committed. */
  readonly queuedWebhooks: string[];
  /** The ids of the logout tokens owed to clients written in it (back-channel logout), sent once it has committed. */
  readonly queuedLogouts: string[];
};

/** Runs `work` as one unit of work and returns what it returns; a throw rolls everything back. */
export type Transact = <T>(work: (trx: UnitOfWork) => Promise<T>) => Promise<T>;

export interface TransactOptions {
  /** Told the audit event types each unit of work recorded, after it has committed (never after a rollback). */
  onCommitted?: (eventTypes: readonly string[]) => void;
  /** Told once a unit of work that wrote webhook messages has committed. */
  onWebhooksQueued?: () => void;
  /** Told once a unit of work that queued back-channel logouts has committed. */
  onLogoutsQueued?: () => void;
}

/** The one way services open units of work on `db`. */
export function transactions(db: Kysely<Database>, options: TransactOptions = {}): Transact {
  return async (work) => {
    const recordedEvents: string[] = [];
    const queuedWebhooks: string[] = [];
    const queuedLogouts: string[] = [];
    const result = await db.transaction().execute((trx) => work(Object.assign(trx, { recordedEvents, queuedWebhooks, queuedLogouts })));
    if (recordedEvents.length > 0) options.onCommitted?.(recordedEvents);
    if (queuedWebhooks.length > 0) options.onWebhooksQueued?.();
    if (queuedLogouts.length > 0) options.onLogoutsQueued?.();
    return result;
  };
}
