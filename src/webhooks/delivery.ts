import type { Kysely } from 'kysely';
import { Webhook } from 'standardwebhooks';
import type { WebhookConfig } from '../config/index.js';
import type { Database } from '../db/types.js';
import {
  claimDueDeliveries,
  pruneFinishedDeliveries,
  recordAttempt,
  releaseDeliveries,
  type ClaimedDelivery,
} from './webhook-repository.js';
import type { Logger } from '../logger.js';
import { DrainLoop } from '../infra/drain-loop.js';
import { deriveKey, unseal } from '../infra/sealed.js';
import { urlProblem } from '../infra/public-addresses.js';
import { postOnce, type PostAnswer } from '../infra/outbound-post.js';

const BATCH = 10;
const MAX_BACKOFF_MS = 60 * 60 * 1000;
const PRUNE_INTERVAL_MS = 60 * 60 * 1000;
const FIRST_PRUNE_MS = 60 * 1000;
const PRUNE_BATCH = 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

/** The key endpoint signing secrets are sealed with at rest, derived from SECRET_KEY. */
export function webhookSealingKey(secretKey: string): Buffer {
  return deriveKey(secretKey, 'webhook-secrets');
}

/**
 * Delivers webhook messages. Each event is written (a message and one delivery per subscribed
 * endpoint) in the transaction of the change it reports; this loop sends what is due, signed as
 * Standard Webhooks asks, and retries failures with exponential backoff. Deliveries are claimed with
 * SKIP LOCKED and a lease longer than an attempt can take, so several processes on one database
 * never send one at the same time, and a restart loses nothing. It also deletes finished deliveries
 * once `retentionDays` have passed.
 */
export class WebhookDispatcher {
  private readonly key: Buffer;
  private readonly leaseMs: number;
  private readonly loop: DrainLoop;
  private pruneTimer: NodeJS.Timeout | undefined;
  private pruning: Promise<number> | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly config: WebhookConfig,
    /** SECRET_KEY, from which the key that seals endpoint secrets is derived. */
    secretKey: string,
    private readonly logger: Logger,
  ) {
    this.key = webhookSealingKey(secretKey);
    this.leaseMs = config.timeoutMs + 60_000;
    this.loop = new DrainLoop(
      () => this.drain(),
      config.pollIntervalMs,
      (error) => this.logger.warn({ err: error }, 'webhooks: could not read the queue'),
    );
  }

  start(): void {
    if (!this.loop.stopped) return;
    this.loop.start();
    const prune = (delayMs: number) => {
      this.pruneTimer = setTimeout(() => {
        void this.prune().finally(() => {
          if (!this.loop.stopped) prune(PRUNE_INTERVAL_MS);
        });
      }, delayMs);
      this.pruneTimer.unref();
    };
    prune(FIRST_PRUNE_MS);
  }

  /** Sends what is due now, without waiting for the next poll (after a commit that queued messages). */
  wake(): void {
    this.loop.wake();
  }

  /**
   * Deletes deliveries delivered or given up more than `retentionDays` ago, and the messages left
   * without any, batch by batch; returns how many rows went. A failure is logged; the next pass retries.
   */
  prune(): Promise<number> {
    this.pruning ??= this.pruneAll()
      .catch((error: unknown) => {
        this.logger.warn({ err: error }, 'webhooks: could not prune finished deliveries');
        return 0;
      })
      .finally(() => {
        this.pruning = undefined;
      });
    return this.pruning;
  }

  /** Stops polling and pruning, and waits for the attempts in flight (each ends within `timeoutMs`). */
  async stop(): Promise<void> {
    clearTimeout(this.pruneTimer);
    await Promise.all([this.loop.stop(), this.pruning]);
  }

  private async pruneAll(): Promise<number> {
    const before = new Date(Date.now() - this.config.retentionDays * DAY_MS);
    let total = 0;
    for (;;) {
      const removed = await pruneFinishedDeliveries(this.db, before, PRUNE_BATCH);
      total += removed;
      if (removed < PRUNE_BATCH || this.loop.stopped) break;
    }
    if (total > 0) this.logger.info({ removed: total }, 'webhooks: pruned finished deliveries');
    return total;
  }

  private async drain(): Promise<void> {
    for (;;) {
      const batch = await claimDueDeliveries(this.db, BATCH, this.leaseMs);
      if (this.loop.stopped) {
        // Stopping: what was claimed but not tried goes back to the queue for the next process.
        await releaseDeliveries(
          this.db,
          batch.map((row) => row.id),
        );
        return;
      }
      // One slow endpoint must not hold up the others: the batch's attempts run side by side.
      await Promise.all(batch.map((row) => this.attempt(row)));
      if (batch.length < BATCH || this.loop.stopped) return;
    }
  }

  private async attempt(row: ClaimedDelivery): Promise<void> {
    const started = new Date();
    const answer = await this.send(row);
    const delivered = answer.statusCode !== null && answer.statusCode >= 200 && answer.statusCode < 300;
    const round = row.attempts - row.round_start;
    const retryInMs =
      delivered || round >= this.config.maxAttempts ? null : Math.min(this.config.retryBaseMs * 2 ** (round - 1), MAX_BACKOFF_MS);
    await recordAttempt(this.db, {
      deliveryId: row.id,
      attemptedAt: started,
      statusCode: answer.statusCode,
      error: answer.error,
      durationMs: Date.now() - started.getTime(),
      delivered,
      retryInMs,
    });
    if (delivered) this.logger.debug({ deliveryId: row.id, messageId: row.message_id }, 'webhooks: delivered');
    else
      this.logger.warn(
        {
          deliveryId: row.id,
          messageId: row.message_id,
          attempts: row.attempts,
          retryInMs,
          statusCode: answer.statusCode,
          err: answer.error,
        },
        retryInMs === null ? 'webhooks: delivery failed, given up' : 'webhooks: delivery failed',
      );
  }

  /** One attempt: the answer's status, or why there was none. */
  private async send(row: ClaimedDelivery): Promise<PostAnswer> {
    const problem = urlProblem(row.url, this.config.allowPrivateUrls);
    if (problem !== undefined) return { statusCode: null, error: `refused: the URL ${problem}` };
    const secrets = [row.secret_sealed, row.previous_secret_sealed].flatMap((sealed) => {
      const secret = sealed === null ? undefined : unseal(this.key, sealed);
      return secret === undefined ? [] : [secret];
    });
    if (secrets.length === 0) return { statusCode: null, error: 'the signing secret cannot be read with the current SECRET_KEY' };
    const sentAt = new Date();
    const signature = secrets.map((secret) => new Webhook(secret).sign(row.message_id, sentAt, row.body)).join(' ');
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'account-service-webhooks',
      'webhook-id': row.message_id,
      'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
      'webhook-signature': signature,
    };
    return postOnce(row.url, headers, row.body, this.config);
  }
}
