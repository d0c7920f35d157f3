import type { Kysely } from 'kysely';
import type { MailConfig } from '../config';
import { claimDueMail, countPendingMail, enqueueMail, markMailFailed, markMailSent, releaseMail } from '../db/outbox';
import type { Database, Executor, OutboxRow } from '../db/types';
import type { Logger } from '../logger';
import type { Mail, MailTransport } from './mail-transport';
import { DrainLoop } from './drain-loop';
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
  private readonly loop: DrainLoop;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly config: MailConfig,
    /** SECRET_KEY, from which the key that seals queued messages is derived. */
    secret: string,
    private readonly transport: MailTransport,
    private readonly logger: Logger,
  ) {
    this.key = deriveKey(secret, 'mail-outbox');
    this.loop = new DrainLoop(
      () => this.drain(),
      config.pollIntervalMs,
      (error) => this.logger.warn({ err: error }, 'mail outbox: could not read the queue'),
    );
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
    this.loop.start();
  }

  /** Delivers what is due now, without waiting for the next poll. */
  wake(): void {
    this.loop.wake();
  }

  /** Stops polling and waits for the batch in hand. */
  async stop(): Promise<void> {
    await this.loop.stop();
    this.transport.close();
  }

  private async drain(): Promise<void> {
    for (;;) {
      const batch = await claimDueMail(this.db, BATCH, LEASE_MS);
      for (const [index, row] of batch.entries()) {
        if (this.loop.stopped) {
          // Stopping: what was claimed but not tried goes back to the queue for the next process.
          await releaseMail(
            this.db,
            batch.slice(index).map((r) => r.id),
          );
          return;
        }
        await this.deliver(row);
      }
      if (batch.length < BATCH || this.loop.stopped) return;
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
