import type { Kysely } from 'kysely';
import type { MailConfig } from '../config/index.js';
import {
  claimNextMail,
  countPendingMail,
  enqueueMail,
  markMailFailed,
  markMailSent,
  renewMailLease,
  type MailClaim,
} from './outbox-repository.js';
import type { Database, Executor, OutboxRow } from '../db/types.js';
import type { Logger } from '../logger.js';
import type { Mail, MailTransport } from '../mail/transport.js';
import { DrainLoop } from './drain-loop.js';
import { deriveKey, seal, unseal } from './sealed.js';

const MAX_BACKOFF_MS = 60 * 60 * 1000;

/**
 * The mail outbox. A message is written in the transaction that creates what it announces, then a
 * background loop delivers it with retries and exponential backoff. Each message is claimed on its
 * own (SKIP LOCKED) with a lease that is renewed while it is being sent, so another process on the
 * same database takes it only once the sender is gone; the claim's attempt count fences the
 * outcome, which is recorded only while the claim is still the latest. A message is marked sent
 * (and its content erased) once the transport accepts it. Its Message-ID comes from its row, so a
 * copy sent again after a crash is recognisable downstream.
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
    while (!this.loop.stopped) {
      const row = await claimNextMail(this.db, this.config.leaseMs);
      if (row === undefined) return;
      await this.deliver(row);
    }
  }

  private async deliver(row: OutboxRow): Promise<void> {
    const claim: MailClaim = { id: row.id, attempts: row.attempts };
    const plain = row.payload === null ? undefined : unseal(this.key, row.payload);
    if (plain === undefined) {
      await markMailFailed(this.db, claim, 'the message cannot be read with the current SECRET_KEY', null);
      this.logger.error({ mailId: row.id }, 'mail outbox: message sealed with another SECRET_KEY, dropped');
      return;
    }
    const mail: Mail = { ...(JSON.parse(plain) as Mail), messageId: `<outbox-${row.id}@${this.config.messageIdDomain}>` };
    let failure: string | undefined;
    const lease = this.holdLease(claim);
    try {
      await this.transport.send(mail);
    } catch (error) {
      failure = (error instanceof Error ? error.message : String(error)).slice(0, 500);
    } finally {
      await lease.release();
    }
    if (failure === undefined) {
      if (await markMailSent(this.db, claim)) this.logger.debug({ mailId: row.id }, 'mail outbox: delivered');
      else this.logger.warn({ mailId: row.id }, 'mail outbox: delivered after its lease was lost; it may be sent again');
      return;
    }
    const giveUp = row.attempts >= this.config.maxAttempts;
    const retryInMs = giveUp ? null : Math.min(this.config.retryBaseMs * 2 ** (row.attempts - 1), MAX_BACKOFF_MS);
    await markMailFailed(this.db, claim, failure, retryInMs);
    this.logger.warn({ mailId: row.id, attempts: row.attempts, retryInMs, err: failure }, 'mail outbox: delivery failed');
  }

  /**
   * Renews the claim's lease every third of its length until released, so a slow send keeps the
   * message however long it takes; a renewal that fails is retried at the next tick.
   */
  private holdLease(claim: MailClaim): { release(): Promise<void> } {
    let renewing: Promise<unknown> = Promise.resolve();
    const timer = setInterval(() => {
      renewing = renewMailLease(this.db, claim, this.config.leaseMs).catch((error: unknown) =>
        this.logger.warn({ mailId: claim.id, err: error }, 'mail outbox: could not renew a lease'),
      );
    }, this.config.leaseMs / 3);
    return {
      release: async () => {
        clearInterval(timer);
        await renewing;
      },
    };
  }
}
