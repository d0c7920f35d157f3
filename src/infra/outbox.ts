import type { Kysely } from 'kysely';
import type { MailConfig } from '../config';
import { claimDueMail, countPendingMail, enqueueMail, markMailFailed, markMailSent, releaseMail } from '../db/outbox';
import type { Database, Executor, OutboxRow } from '../db/types';
import type { Logger } from '../logger';
import type { Mail, MailTransport } from './mail-transport';
import { deriveKey, seal, unseal } from './sealed';

const BATCH = 10;
const LEASE_MS = 60_000;
const MAX_BACKOFF_MS = 60 * 60 * 1000;

/**
 * The mail outbox. A message is written in the transaction that creates what it announces, then a
 * background loop delivers it with retries and exponential backoff. Rows are claimed with
 * SKIP LOCKED and a lease, so several processes on one database never send a message twice at
 * once; a message is marked sent (and its content erased) once the transport accepts it.
 */
export class Outbox {
  private readonly key: Buffer;
  private timer: NodeJS.Timeout | undefined;
  private draining: Promise<void> | undefined;
  private again = false;
  private stopped = true;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly config: MailConfig,
    /** SECRET_KEY, from which the key that seals queued messages is derived. */
    secret: string,
    private readonly transport: MailTransport,
    private readonly logger: Logger,
  ) {
    this.key = deriveKey(secret, 'mail-outbox');
  }

  /** Queues a message in the caller's transaction; call `wake()` once it commits. */
  async enqueue(db: Executor, mail: Mail): Promise<void> {
    await enqueueMail(db, { recipient: mail.to, subject: mail.subject, payload: seal(this.key, JSON.stringify(mail)) });
  }

  /** Messages waiting to be sent (or retried). */
  backlog(): Promise<number> {
    return countPendingMail(this.db);
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    const tick = () => {
      this.timer = setTimeout(() => {
        this.wake();
        tick();
      }, this.config.pollIntervalMs);
      this.timer.unref();
    };
    // The first pass waits for the first tick too: it is the first query on this table, which costs an
    // embedded database a tenth of a second of reading its catalog, and the start should not wait for it.
    // Mail queued by requests is sent at once regardless (`wake()`).
    tick();
  }

  /** Delivers what is due now, without waiting for the next poll. */
  wake(): void {
    if (this.stopped) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    this.draining = this.drain()
      .catch((error: unknown) => this.logger.warn({ err: error }, 'mail outbox: could not read the queue'))
      .finally(() => {
        this.draining = undefined;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  /** Stops polling and waits for the batch in hand. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.draining;
    this.transport.close();
  }

  private async drain(): Promise<void> {
    for (;;) {
      const batch = await claimDueMail(this.db, BATCH, LEASE_MS);
      for (const [index, row] of batch.entries()) {
        if (this.stopped) {
          // Stopping: what was claimed but not tried goes back to the queue for the next process.
          await releaseMail(
            this.db,
            batch.slice(index).map((r) => r.id),
          );
          return;
        }
        await this.deliver(row);
      }
      if (batch.length < BATCH || this.stopped) return;
    }
  }

  private async deliver(row: OutboxRow): Promise<void> {
    const plain = row.payload === null ? undefined : unseal(this.key, row.payload);
    if (plain === undefined) {
      await markMailFailed(this.db, row.id, 'the message cannot be read with the current SECRET_KEY', null);
      this.logger.error({ mailId: row.id }, 'mail outbox: message sealed with another SECRET_KEY, dropped');
      return;
    }
    try {
      await this.transport.send(JSON.parse(plain) as Mail);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const giveUp = row.attempts >= this.config.maxAttempts;
      const retryInMs = giveUp ? null : Math.min(this.config.retryBaseMs * 2 ** (row.attempts - 1), MAX_BACKOFF_MS);
      await markMailFailed(this.db, row.id, message.slice(0, 500), retryInMs);
      this.logger.warn({ mailId: row.id, attempts: row.attempts, retryInMs, err: message }, 'mail outbox: delivery failed');
      return;
    }
    await markMailSent(this.db, row.id);
    this.logger.debug({ mailId: row.id }, 'mail outbox: delivered');
  }
}
